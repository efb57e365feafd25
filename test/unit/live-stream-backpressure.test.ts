import { describe, expect, it } from "vitest";
import { createProxyApp } from "../../proxy-worker/app.ts";
import { LOCAL_TASK_ID } from "../../proxy-worker/auth.ts";
import type { StreamedAnswer, TextSink, Upstream } from "../../proxy-worker/upstream.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { readCaptures } from "../support/proxy.ts";

// Live streams take the engine's body pushed (proxy-worker/stream/engine-stream.ts). A client that
// does not read must not hold the engine's answer back: the engine goes on sampling whatever the
// proxy reads, so the answer ends (and its capture, with the version it ended under, is taken) when
// the engine finishes, while the client's frames wait for it (issue 41, item 16).

const TOKENS = 20_000;
const PER_TICK = 20;
const base = { id: "chatcmpl-bp", object: "chat.completion.chunk", created: 1, model: "m" };

/** A vLLM-shaped engine that pushes chunks as fast as it samples them, whoever reads. */
function fastEngine() {
  const state = { sent: 0 };
  let sink: TextSink | undefined;
  let done = false;
  const tick = () => {
    if (done || !sink) return;
    for (let i = 0; i < PER_TICK && state.sent < TOKENS; i++) {
      state.sent++;
      const choice = {
        index: 0,
        delta: { content: `t${state.sent} ` },
        logprobs: { content: [{ token: `t${state.sent}`, logprob: -0.5 }] },
        finish_reason: state.sent === TOKENS ? "stop" : null,
        token_ids: [100 + (state.sent % 1000)],
      };
      sink.data(`data: ${JSON.stringify({ ...base, choices: [choice] })}\n\n`);
    }
    if (state.sent === TOKENS) {
      done = true;
      // As vLLM with `stream_options.include_usage`: the count the proxy checks the ids against.
      const usage = { prompt_tokens: 3, completion_tokens: TOKENS, total_tokens: TOKENS + 3 };
      sink.data(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      sink.data("data: [DONE]\n\n");
      sink.end();
      return;
    }
    setImmediate(tick);
  };
  const answer: StreamedAnswer = {
    status: 200,
    contentType: "text/event-stream",
    text: async () => "",
    read(s) {
      sink = s;
      const head = {
        index: 0,
        delta: { role: "assistant", content: "" },
        logprobs: null,
        finish_reason: null,
      };
      s.data(`data: ${JSON.stringify({ ...base, prompt_token_ids: [1, 2, 3], choices: [head] })}\n\n`);
      setImmediate(tick);
    },
  };
  const upstream: Upstream = {
    baseUrl: "http://engine.test",
    // The model list (context length) is not served: the proxy then passes max_tokens through.
    fetch: (async () => new Response("not here", { status: 404 })) as unknown as typeof fetch,
    stream: async () => answer,
  };
  return { state, upstream };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("live stream back-pressure", () => {
  it("reads the engine to its end while the client does not read, and the client then gets all of it", async () => {
    const engine = fastEngine();
    const store = new MemoryStore();
    const app = createProxyApp({
      store,
      upstream: engine.upstream,
      auth: "off",
      streamMode: "live",
      streamFlushMs: 0,
      log: () => {},
    });
    const res = await app.fetch(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer bp-session" },
        body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "go" }] }),
      }),
    );
    expect(res.status).toBe(200);

    // Nobody reads: the engine's answer is read to its end and captured all the same.
    for (let i = 0; i < 100 && (await readCaptures(store, LOCAL_TASK_ID, "bp-session")).length === 0; i++)
      await sleep(50);
    expect(engine.state.sent).toBe(TOKENS);
    const caps = await readCaptures(store, LOCAL_TASK_ID, "bp-session");
    expect(caps).toHaveLength(1);
    expect(caps[0].stream_status).toBe("complete");
    expect(caps[0].response_token_ids).toHaveLength(TOKENS);

    // Reading then gets the whole answer, the terminal event last.
    const text = await res.text();
    expect(text).toContain(`t${TOKENS} `);
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(text.match(/"content":"t\d+ "/g)).toHaveLength(TOKENS);
  });
});
