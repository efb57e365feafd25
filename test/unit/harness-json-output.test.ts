import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  jsonLines,
  lastJsonDocument,
  parseClaudeStreamJson,
  parseClineJson,
  parseCodexJsonl,
  parseGeminiJson,
  parseOpencodeJsonl,
  parsePiJsonl,
  parseQwenJson,
} from "../../batch-runner/harness/json-output.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";

const lines = (...events: unknown[]) => events.map((e) => JSON.stringify(e)).join("\n");

describe("jsonLines / lastJsonDocument", () => {
  it("skips log lines and a line cut off by a kill", () => {
    const text = `starting up\n{"a":1}\n{not json\n[1,2]\n{"b":`;
    expect(jsonLines(text)).toEqual([{ a: 1 }, [1, 2]]);
  });

  it("finds a pretty-printed document after log lines", () => {
    const text = `Loaded cached credentials.\n{\n  "response": "Done.",\n  "stats": {}\n}\n`;
    expect(lastJsonDocument(text)).toEqual({ response: "Done.", stats: {} });
    expect(lastJsonDocument("no json here")).toBeUndefined();
    expect(lastJsonDocument("")).toBeUndefined();
  });
});

describe("Claude Code stream-json", () => {
  const assistant = { type: "assistant", message: { content: [{ type: "text", text: "partial" }] } };

  it("reads the result event", () => {
    const out = lines({ type: "system", subtype: "init" }, assistant, {
      type: "result",
      subtype: "success",
      is_error: false,
      result: "Done.",
    });
    expect(parseClaudeStreamJson(out, 0)).toEqual({ finalAnswer: "Done.", success: true });
  });

  it("an error result or a non-zero exit is a failure", () => {
    const bad = lines({ type: "result", subtype: "error_max_turns", is_error: true, result: "x" });
    expect(parseClaudeStreamJson(bad, 1).success).toBe(false);
    const ok = lines({ type: "result", subtype: "success", is_error: false, result: "y" });
    expect(parseClaudeStreamJson(ok, 1)).toEqual({ finalAnswer: "y", success: false });
  });

  it("without a result event keeps the last assistant text and fails", () => {
    expect(parseClaudeStreamJson(lines(assistant), null)).toEqual({
      finalAnswer: "partial",
      success: false,
    });
    expect(parseClaudeStreamJson("", null)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("Qwen Code json", () => {
  it("reads the result message of the JSON array", () => {
    const doc = JSON.stringify([
      { type: "system", subtype: "init" },
      { type: "result", subtype: "success", is_error: false, result: "Done." },
    ]);
    expect(parseQwenJson(doc, 0)).toEqual({ finalAnswer: "Done.", success: true });
    expect(parseQwenJson("garbage", 0)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("Codex exec --json", () => {
  it("takes the last agent message and needs turn.completed", () => {
    const out = lines(
      { type: "thread.started", thread_id: "t" },
      { type: "item.completed", item: { id: "0", type: "reasoning", text: "hmm" } },
      { type: "item.completed", item: { id: "1", type: "agent_message", text: "first" } },
      { type: "item.completed", item: { id: "2", type: "agent_message", text: "Done." } },
      { type: "turn.completed", usage: {} },
    );
    expect(parseCodexJsonl(out, 0)).toEqual({ finalAnswer: "Done.", success: true });
  });

  it("turn.failed is a failure even with exit 0", () => {
    const out = lines({ type: "turn.failed", error: { message: "stream disconnected" } });
    expect(parseCodexJsonl(out, 0)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("Gemini CLI json", () => {
  it("reads response and treats an error field as failure", () => {
    expect(parseGeminiJson(JSON.stringify({ response: "Done.", stats: {} }), 0)).toEqual({
      finalAnswer: "Done.",
      success: true,
    });
    const err = JSON.stringify({ error: { type: "ApiError", message: "500", code: 1 } });
    expect(parseGeminiJson(err, 1)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("OpenCode --format json", () => {
  it("takes the last text part; an error event fails the run", () => {
    const text = (t: string) => ({ type: "text", part: { type: "text", text: t } });
    const out = lines({ type: "step_start" }, text("a"), { type: "tool_use" }, text("Done."));
    expect(parseOpencodeJsonl(out, 0)).toEqual({ finalAnswer: "Done.", success: true });
    const failed = lines(text("a"), { type: "error", error: { name: "APIError" } });
    expect(parseOpencodeJsonl(failed, 0).success).toBe(false);
  });
});

describe("Pi --mode json", () => {
  const msg = (text: string, stopReason = "stop") => ({
    role: "assistant",
    content: [
      { type: "thinking", thinking: "..." },
      { type: "text", text },
    ],
    stopReason,
  });

  it("takes the last assistant message of agent_end", () => {
    const out = lines(
      { type: "session", version: 3 },
      { type: "agent_start" },
      { type: "agent_end", messages: [{ role: "user", content: [] }, msg("x"), msg("Done.")] },
    );
    expect(parsePiJsonl(out, 0)).toEqual({ finalAnswer: "Done.", success: true });
  });

  it("an error stop reason or a missing agent_end is a failure", () => {
    const errored = lines({ type: "agent_end", messages: [msg("", "error")] });
    expect(parsePiJsonl(errored, 0)).toEqual({ finalAnswer: null, success: false });
    const killed = lines({ type: "message_end", message: msg("so far") });
    expect(parsePiJsonl(killed, null)).toEqual({ finalAnswer: "so far", success: false });
  });
});

describe("Cline --json", () => {
  const result = (finishReason: string, text: string) => ({ type: "run_result", finishReason, text });

  it("reads the run_result event", () => {
    const out = lines({ type: "agent_event", event: { type: "iteration_start" } }, result("completed", "ok"));
    expect(parseClineJson(`warning on stderr\n${out}`, 0)).toEqual({ finalAnswer: "ok", success: true });
  });

  it("another finish reason, or no run_result, is a failure", () => {
    expect(parseClineJson(lines(result("max_iterations", "so far")), 0)).toEqual({
      finalAnswer: "so far",
      success: false,
    });
    expect(parseClineJson(lines({ type: "agent_event" }), 0)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("recorded output of the real CLIs (test/fixtures/harness-output)", () => {
  const fixtures = new URL("../fixtures/harness-output/", import.meta.url);

  it.each(Object.entries(CLI_PRESETS))("%s: its preset reads the answer of a clean run", (name, preset) => {
    const stdout = readFileSync(new URL(`${name}.stdout.txt`, fixtures), "utf8");
    expect(preset.parseOutput(stdout, "", 0)).toEqual({ finalAnswer: "Done.", success: true });
    // The same output with a failed exit status is not a success.
    expect(preset.parseOutput(stdout, "", 1).success).toBe(false);
    // Cut off mid-run (killed by the budget): never a success, never a throw.
    expect(preset.parseOutput(stdout.slice(0, Math.floor(stdout.length / 2)), "", null).success).toBe(false);
  });
});
