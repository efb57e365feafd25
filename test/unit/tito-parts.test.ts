import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseParserSpec } from "../../proxy-worker/tito/completions-channel.ts";
import { parseOutput } from "../../proxy-worker/tito/output-parsers.ts";
import { mintSessionToken, verifySessionToken } from "../../shared/session-token.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

// The parts of token-in-token-out that stand alone; the whole flow is in tito-session.test.ts.
const KEY = "tito-parts-key";

describe("the session token's tito claim", () => {
  it("is carried only for token-in-token-out tasks", async () => {
    const on = await verifySessionToken(
      await mintSessionToken({ sessionId: "s", taskId: "t", tokenInTokenOut: true }, KEY),
      KEY,
    );
    const off = await verifySessionToken(await mintSessionToken({ sessionId: "s", taskId: "t" }, KEY), KEY);
    expect(on.ok && on.tokenInTokenOut).toBe(true);
    expect(off.ok && "tokenInTokenOut" in off).toBe(false);
  });
});

describe("the dry-run policy's token prompts", () => {
  let policy: PolicyServer;
  beforeAll(async () => {
    policy = await startPolicy();
  });
  afterAll(() => policy?.close());
  const post = (body: unknown) =>
    fetch(`${policy.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify(body) });
  const messages = [{ role: "user", content: "hi" }];

  it("answers from the ids given on either channel, as the engines do", async () => {
    for (const channel of [
      { input_ids: [9707, 11] },
      { kv_transfer_params: { prompt_token_ids: [9707, 11] } },
    ]) {
      const res = await post({ messages, return_token_ids: true, ...channel });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { prompt_token_ids: number[] }).prompt_token_ids).toEqual([9707, 11]);
    }
  });

  it("refuses ids outside its vocabulary", async () => {
    const res = await post({ messages, input_ids: [1, 10_000_000] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("out of vocabulary");
    const kv = await post({ messages, kv_transfer_params: { prompt_token_ids: [-1] } });
    expect(kv.status).toBe(400);
  });
});

describe("proxy-side output parsers", () => {
  let n = 0;
  const id = () => `call-${n++}`;
  it("qwen3: reasoning, content and Hermes tool calls", () => {
    const out = parseOutput(
      "qwen3",
      '<think>\nplan\n</think>\n\nRunning it.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
      id,
    );
    expect(out.reasoning).toBe("plan");
    expect(out.content).toBe("Running it.");
    expect(out.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ["bash", { command: "ls" }],
    ]);
  });
  it("qwen3: a think block cut by max_tokens is all reasoning", () => {
    expect(parseOutput("qwen3", "<think>\nhalf a tho", id)).toEqual({
      reasoning: "half a tho",
      content: null,
      toolCalls: [],
    });
  });
  it("qwen3, as vLLM 0.32 parses it: no opening tag needed, a tool call ends reasoning, thinking off has none", () => {
    // Checked on the wire against vLLM 0.32 (test/engine/proxy-real-vllm.test.ts): a cut answer
    // without any tag is all reasoning when thinking is on.
    expect(parseOutput("qwen3", "just words", id)).toEqual({
      reasoning: "just words",
      content: null,
      toolCalls: [],
    });
    expect(parseOutput("qwen3", "plan\n</think>\n\nDone.", id)).toMatchObject({
      reasoning: "plan",
      content: "Done.",
    });
    const call = parseOutput(
      "qwen3",
      'plan\n<tool_call>\n{"name": "bash", "arguments": {}}\n</tool_call>',
      id,
    );
    expect(call).toMatchObject({ reasoning: "plan", content: null });
    expect(call.toolCalls.map((c) => c.function.name)).toEqual(["bash"]);
    expect(parseOutput("qwen3", "just words", id, false)).toEqual({
      reasoning: null,
      content: "just words",
      toolCalls: [],
    });
  });
  it("hermes: a call that does not parse stays text; think tags are not special", () => {
    const out = parseOutput("hermes", "<think>x</think>ok <tool_call>{oops</tool_call>", id);
    expect(out.reasoning).toBeNull();
    expect(out.toolCalls).toEqual([]);
    expect(out.content).toBe("<think>x</think>ok <tool_call>{oops</tool_call>");
  });
});

describe("--tito-completions", () => {
  it("names a parser for every model or per model, and refuses unknown parsers", () => {
    expect(parseParserSpec("qwen3")).toEqual({ parsers: { "*": "qwen3" } });
    expect(parseParserSpec("policy=qwen3,org/m=hermes")).toEqual({
      parsers: { policy: "qwen3", "org/m": "hermes" },
    });
    expect(parseParserSpec("policy=llama")).toMatch(/one of qwen3, hermes/);
    expect(parseParserSpec("=qwen3")).toMatch(/expected/);
  });
});

describe("the session capture cache", () => {
  it("keeps the most recently used sessions, without the client's body", async () => {
    const { SessionCaptureCache } = await import("../../proxy-worker/tito/session-lookup.ts");
    const cache = new SessionCaptureCache(2);
    const rec = (id: string) => ({ capture_id: id, request: { big: "body" } }) as never;
    cache.set("a", rec("1"));
    cache.set("b", rec("2"));
    expect(cache.get("a")?.capture_id).toBe("1"); // a is now the most recent
    cache.set("c", rec("3"));
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")?.request).toBeNull();
    expect(cache.get("c")?.capture_id).toBe("3");
  });
});

describe("the Worker's token-in-token-out variables", () => {
  it("TOKEN_IN_TOKEN_OUT and TITO_COMPLETIONS set the proxy's switches; a bad parser is a config error", async () => {
    const { depsFromEnv, WorkerConfigError } = await import("../../proxy-worker/worker-config.ts");
    const bucket = {
      put: async () => null,
      get: async () => null,
      list: async () => ({ objects: [], truncated: false }),
      delete: async () => {},
    };
    const base = { UPSTREAM_URL: "http://127.0.0.1:8000", POLAR_SIGNING_KEY: "k", CAPTURES: bucket };
    expect(depsFromEnv(base, fetch).tokenInTokenOut).toBeUndefined();
    const on = depsFromEnv({ ...base, TOKEN_IN_TOKEN_OUT: "on", TITO_COMPLETIONS: "qwen3" }, fetch);
    expect(on.tokenInTokenOut).toBe(true);
    expect(on.titoCompletions).toEqual({ parsers: { "*": "qwen3" } });
    expect(() => depsFromEnv({ ...base, TITO_COMPLETIONS: "llama" }, fetch)).toThrow(WorkerConfigError);
    expect(() => depsFromEnv({ ...base, TOKEN_IN_TOKEN_OUT: "yes" }, fetch)).toThrow(/TOKEN_IN_TOKEN_OUT/);
  });
});
