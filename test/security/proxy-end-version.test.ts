import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { memoryPolicyVersion } from "../../proxy-worker/admin.ts";
import { LOCAL_TASK_ID } from "../../proxy-worker/auth.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * Issue 41, item 16: a client that paused its live stream across an engine version change got a
 * capture whose `policy_version_end` was the new version, although the engine had finished under
 * the old one: the proxy paused its reading of the engine with the client, and read the end
 * version only when the client finally read the end. The end version is now taken when the engine
 * finishes, for the engine's own version (`/weight_info`) and for the proxy's.
 */
const started: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const base = { id: "chatcmpl-ev", object: "chat.completion.chunk", created: 1, model: "m" };
/** Long tokens: the client's frames must outgrow what the loopback sockets hold (several MiB each way). */
const PAD = "x".repeat(1000);

interface Engine {
  url: string;
  /** The version `/weight_info` reports; null: the route is not there. */
  version: string | null;
  /** Set when the engine has sampled the whole answer and its last byte has left for the proxy. */
  finished: boolean;
  /** Lets a held answer go on (see `holdAfter`). */
  go(): void;
}

/**
 * A vLLM-shaped engine streaming `tokens` chunks as fast as its socket takes them (Node buffers
 * what the peer does not read, as vLLM's engine keeps sampling into its output queue); with
 * `holdAfter`, it stops after that many chunks until `go()`.
 */
async function streamingEngine(tokens: number, holdAfter?: number): Promise<Engine> {
  let release: () => void = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const engine: Engine = { url: "", version: null, finished: false, go: () => release() };
  const chunk = (i: number) => {
    const choice = {
      index: 0,
      delta: { content: `t${i} ${PAD}` },
      logprobs: { content: [{ token: `t${i}`, logprob: -0.5, bytes: [116], top_logprobs: [] }] },
      finish_reason: i === tokens ? "stop" : null,
      token_ids: [100 + (i % 1000)],
    };
    return `data: ${JSON.stringify({ ...base, choices: [choice] })}\n\n`;
  };
  const answer = async (res: ServerResponse) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const head = { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null };
    res.write(`data: ${JSON.stringify({ ...base, prompt_token_ids: [1, 2, 3], choices: [head] })}\n\n`);
    for (let i = 1; i <= tokens; i++) {
      if (i - 1 === holdAfter) await held;
      res.write(chunk(i));
    }
    const usage = { prompt_tokens: 3, completion_tokens: tokens, total_tokens: tokens + 3 };
    res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
    // 'finish': every byte handed to the OS, i.e. the peer has been taking them as they came.
    res.end("data: [DONE]\n\n", () => {
      engine.finished = true;
    });
  };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/weight_info" && engine.version !== null) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ weight_version: engine.version }));
      } else if (req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"object":"list","data":[{"id":"m","max_model_len":100000}]}');
      } else if (req.url === "/v1/chat/completions") {
        void answer(res);
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end('{"detail":"Not Found"}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  engine.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  started.push({
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return engine;
}

async function proxyFor(engine: Engine, extra: Parameters<typeof startProxy>[0] | object = {}) {
  const proxy: TestProxy = await startProxy({
    upstream: engine.url,
    auth: "off",
    streamMode: "live",
    log: () => {},
    ...extra,
  });
  started.push(proxy);
  return proxy;
}

function streamCall(proxy: TestProxy, session: string) {
  return fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${session}` },
    body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "go" }] }),
  });
}

describe("the end version is the engine's at the end of its answer", () => {
  it("a client that stops reading while the engine finishes under v1, then the engine moves to v2: end v1", async () => {
    // ~20 MB of stream: far more than the sockets between engine, proxy and client hold.
    const TOKENS = 20_000;
    const engine = await streamingEngine(TOKENS);
    engine.version = "v1";
    const proxy = await proxyFor(engine);
    const res = await streamCall(proxy, "paused-client");
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the first frames; then the client stops reading
    // The old proxy stopped reading the engine with its client: the answer never left the engine.
    for (let i = 0; i < 100 && !engine.finished; i++) await sleep(50);
    await sleep(300);
    engine.version = "v2";
    await sleep(100);
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    const [capture] = await readCaptures(proxy.store, LOCAL_TASK_ID, "paused-client");
    expect(capture.response_token_ids).toHaveLength(TOKENS);
    expect(capture.policy_version_source).toBe("engine");
    expect(capture.policy_version).toBe("v1");
    expect(capture.policy_version_end).toBe("v1");
  });

  it("the proxy's own version: set to p2 while the engine samples, the end is p2", async () => {
    const engine = await streamingEngine(20, 10);
    const version = memoryPolicyVersion("p1");
    const proxy = await proxyFor(engine, { policyVersion: version });
    const res = await streamCall(proxy, "proxy-version");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await sleep(100);
    version.set("p2");
    engine.go();
    while (!(await reader.read()).done) {}
    const [capture] = await readCaptures(proxy.store, LOCAL_TASK_ID, "proxy-version");
    expect(capture.policy_version_source).toBe("proxy");
    expect(capture.policy_version).toBe("p1");
    expect(capture.policy_version_end).toBe("p2");
  });
});
