import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI_PRESETS, type CliHarnessName } from "../../batch-runner/harness/registry.ts";
import type { ChatMessage } from "../../proxy-worker/chat/types.ts";
import { defaultCodecs } from "../../proxy-worker/codecs/registry.ts";

/*
 * Replays the request bodies recorded from the real CLIs (test/fixtures/harness-traffic) through
 * the codec of the API each harness speaks: a codec change that breaks a real harness's request
 * fails here without installing anything.
 */

const SHELL_TOOL: Record<CliHarnessName, string> = {
  claude_code: "Bash",
  codex: "exec_command",
  gemini_cli: "run_shell_command",
  qwen_code: "run_shell_command",
  opencode: "bash",
  pi: "bash",
  mini_swe_agent: "bash",
  hermes: "terminal",
  openhands_sdk: "terminal",
  openclaw: "exec",
  cline: "run_commands",
};

/** The Python agents call litellm.completion without `stream`; every npm CLI streams. */
const NOT_STREAMED: readonly CliHarnessName[] = ["mini_swe_agent", "openhands_sdk"];

const root = new URL("../fixtures/harness-traffic/", import.meta.url);

function text(message: ChatMessage): string {
  if (typeof message.content === "string") return message.content;
  return (message.content ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

const cases = (Object.keys(CLI_PRESETS) as CliHarnessName[]).flatMap((name) =>
  readdirSync(new URL(`${name}/`, root)).map((file) => [name, file] as const),
);

describe("recorded harness requests decode with their provider's codec", () => {
  it("has first and last calls for every harness", () => {
    for (const name of Object.keys(CLI_PRESETS)) {
      expect(cases.filter(([n]) => n === name).length).toBeGreaterThanOrEqual(2);
    }
  });

  it.each(cases)("%s %s", (name, file) => {
    const body = JSON.parse(readFileSync(new URL(`${name}/${file}`, root), "utf8"));
    const provider = CLI_PRESETS[name].provider;
    const codec = defaultCodecs[provider];
    if (!codec) throw new Error(`no codec for ${provider}`);
    const google = provider === "google";
    const decoded = codec.decodeRequest(body, {
      path: google ? "/v1beta/models/policy:streamGenerateContent" : "/",
      query: new URLSearchParams(google ? "alt=sse" : ""),
      ...(google ? { pathModel: "policy", pathStream: true } : {}),
    });
    expect(decoded.stream).toBe(!NOT_STREAMED.includes(name));
    const names = (decoded.chat.tools ?? []).map((t) => t.function.name);
    expect(names).toContain(SHELL_TOOL[name]);
    // The task's script reached the normalized conversation.
    const users = decoded.chat.messages.filter((m) => m.role === "user").map(text);
    expect(users.some((t) => t.includes("```polar-script"))).toBe(true);
    if (file.includes("last-call")) {
      // Two shell calls were made and answered before the last call.
      const calls = decoded.chat.messages.flatMap((m) => m.tool_calls ?? []);
      expect(calls.map((c) => c.function.name)).toEqual([SHELL_TOOL[name], SHELL_TOOL[name]]);
      expect(decoded.chat.messages.filter((m) => m.role === "tool").length).toBe(2);
    }
  });
});
