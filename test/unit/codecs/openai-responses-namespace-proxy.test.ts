// biome-ignore-all lint/suspicious/noExplicitAny: assertions walk the untyped JSON a client would receive
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTrajectory } from "../../../batch-runner/reconstruction/build-session.ts";
import type { CaptureRecord } from "../../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../../shared/session-token.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../../support/proxy.ts";
import { dataPayloads, loadFixture } from "./openai-codec-fixtures.ts";

/*
 * Namespace tools through the real proxy and the dry-run policy: the recorded Codex 0.169 request
 * (openai-responses-namespace.test.ts says where it comes from) with its script swapped, a session
 * that calls the namespaced MCP tool on every turn and sends history back as Codex does.
 */
const KEY = "namespace-test-signing-key";
const TASK = "namespace-task";
const ARGS = JSON.stringify({ path: "hello.txt", text: "hi\n" });
const STEPS = [
  "think: I write the note.",
  `tool: mcp__notes__write_note ${ARGS}`,
  "think: Once more.",
  `tool: mcp__notes__write_note ${ARGS}`,
  `tool: mcp__notes__write_note ${ARGS}`,
  "say: Done.",
];
type Json = Record<string, any>;

/** The recorded turn-1 request with the last user message holding `steps`. */
function firstRequest(steps: readonly string[], stream: boolean): Json {
  const body = structuredClone(
    loadFixture<Json>("openai-responses", "codex-0.169-mcp-namespace-turn1.request.json"),
  );
  const input = body.input as Json[];
  input[input.length - 1] = {
    type: "message",
    role: "user",
    content: [{ type: "input_text", text: scriptMessage(steps) }],
  };
  return { ...body, stream };
}

async function post(proxy: TestProxy, body: unknown, token: string): Promise<Response> {
  return fetch(`${proxy.url}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

describe("namespace tools through the proxy", () => {
  let policy: PolicyServer;
  let proxy: TestProxy;
  beforeAll(async () => {
    policy = await startPolicy();
    proxy = await startProxy({ upstream: policy.url, signingKey: KEY, log: () => {} });
  });
  afterAll(async () => {
    await proxy?.close();
    await policy?.close();
  });

  /** Codex's loop: keep the call items as they came (namespace and all), answer each call. */
  async function session(sessionId: string, tito: boolean): Promise<CaptureRecord[]> {
    const token = await mintSessionToken({ sessionId, taskId: TASK, tokenInTokenOut: tito }, KEY);
    let body = firstRequest(STEPS, false);
    for (let turn = 0; turn < 8; turn++) {
      const res = await post(proxy, body, token);
      const answer = (await res.json()) as Json;
      expect(res.status, JSON.stringify(answer)).toBe(200);
      const calls = (answer.output as Json[]).filter((o) => o.type === "function_call");
      if (calls.length === 0) break;
      for (const call of calls) expect(call).toMatchObject({ namespace: "mcp__notes", name: "write_note" });
      const outputs = calls.map((c) => ({
        type: "function_call_output",
        call_id: c.call_id,
        output: [{ type: "input_text", text: `wrote hello.txt (3 bytes) #${turn}` }],
      }));
      const kept = (answer.output as Json[]).filter((o) => o.type !== "reasoning");
      body = { ...body, input: [...body.input, ...kept, ...outputs] };
    }
    return readCaptures(proxy.store, TASK, sessionId);
  }

  it("token-in-token-out: every later turn splices onto the one before, and the session is 1 trace", async () => {
    const captures = await session("ns-tito", true);
    expect(captures).toHaveLength(4);
    expect(captures.map((c) => c.tito)).toEqual([
      "fallback:no_prior_capture",
      "spliced",
      "spliced",
      "spliced",
    ]);
    for (let k = 1; k < captures.length; k++) {
      const prev = captures[k - 1];
      const head = [...(prev.prompt_token_ids ?? []), ...(prev.response_token_ids ?? [])];
      expect(captures[k].parent_capture_id).toBe(prev.capture_id);
      expect(captures[k].prompt_token_ids?.slice(0, head.length)).toEqual(head);
    }
    const traces = buildTrajectory(captures, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces;
    expect(traces).toHaveLength(1);
  });

  it("streamed through the proxy, the call's items carry the namespace", async () => {
    const token = await mintSessionToken({ sessionId: "ns-stream", taskId: TASK }, KEY);
    const res = await post(proxy, firstRequest([`tool: mcp__notes__write_note ${ARGS}`], true), token);
    expect(res.status).toBe(200);
    const text = await res.text();
    const frames = text
      .split("\n\n")
      .filter(Boolean)
      .map((f) => `${f}\n\n`);
    const events = dataPayloads(frames) as Json[];
    const items = events.filter((e) => /output_item\.(added|done)$/.test(e.type)).map((e) => e.item);
    expect(items).toHaveLength(2);
    for (const item of items)
      expect(item).toMatchObject({ type: "function_call", name: "write_note", namespace: "mcp__notes" });
    expect(items[1].arguments).toBe(ARGS.replaceAll(",", ", ").replaceAll(":", ": "));
  });

  it("a malformed namespace tool is a 400 in the Responses error shape", async () => {
    const token = await mintSessionToken({ sessionId: "ns-bad", taskId: TASK }, KEY);
    const body = {
      model: "policy",
      input: "hi",
      tools: [{ type: "namespace", name: "mcp__notes", tools: [{ type: "mcp" }] }],
    };
    const res = await post(proxy, body, token);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { message: expect.stringContaining("tools[0].tools[0].type"), type: "invalid_request_error" },
    });
  });
});
