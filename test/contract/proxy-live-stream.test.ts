import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { usableCaptures } from "../../batch-runner/reconstruction/usable-captures.ts";
import { LOCAL_TASK_ID } from "../../proxy-worker/auth.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { readAll } from "../support/read-all.ts";

/**
 * Live streaming's failure rules against a running proxy: a store failure ends the stream with the
 * provider's error event and no terminal event; a client that leaves aborts the upstream call and
 * leaves an `aborted` capture; streamed ids that do not add up (vllm#27482) mark `ids_incomplete`.
 */
const TASK = "live";

/** A store whose captures cannot be written (the proxy retries once, then gives up). */
class FailingStore extends MemoryStore {
  override async put(): Promise<void> {
    throw new Error("disk on fire");
  }
}

/** One streamed request per provider, with the wire markers of its terminal and error events. */
const PROVIDERS = [
  {
    name: "openai_chat",
    path: "/v1/chat/completions",
    body: (text: string) => ({ model: "m", stream: true, messages: [{ role: "user", content: text }] }),
    terminal: "data: [DONE]",
    error: '"error":{',
  },
  {
    name: "anthropic",
    path: "/v1/messages",
    body: (text: string) => ({
      model: "m",
      max_tokens: 200,
      stream: true,
      messages: [{ role: "user", content: text }],
    }),
    terminal: "event: message_stop",
    error: "event: error",
  },
  {
    name: "openai_responses",
    path: "/v1/responses",
    body: (text: string) => ({ model: "m", stream: true, input: text }),
    terminal: "response.completed",
    error: "event: response.failed",
  },
  {
    name: "google",
    path: "/v1beta/models/m:streamGenerateContent?alt=sse",
    body: (text: string) => ({ contents: [{ role: "user", parts: [{ text }] }] }),
    terminal: '"finishReason"',
    error: '"error":{',
  },
] as const;

let policy: PolicyServer;
beforeAll(async () => {
  policy = await startPolicy();
});
afterAll(async () => {
  await policy?.close();
});

async function post(proxy: TestProxy, path: string, session: string, body: unknown, signal?: AbortSignal) {
  return fetch(`${proxy.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${session}`, "x-api-key": session },
    body: JSON.stringify(body),
    signal,
  });
}

describe("store failure mid-stream", () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startProxy({
      upstream: policy.url,
      store: new FailingStore(),
      streamMode: "live",
      captureRetry: { attempts: 1, baseDelayMs: 0 },
      log: () => {},
    });
  });
  afterAll(() => proxy?.close());

  for (const p of PROVIDERS) {
    it(`${p.name}: the stream ends with the error event, never the terminal event`, async () => {
      const res = await post(
        proxy,
        p.path,
        `${TASK}-store-${p.name}`,
        p.body(scriptMessage(["say: Hello there."])),
      );
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain("Hello");
      expect(text).toContain(p.error);
      expect(text).toContain("could not store");
      expect(text).not.toContain(p.terminal);
    });
  }

  it("the same calls with a working store end with the terminal event", async () => {
    const ok = await startProxy({ upstream: policy.url, streamMode: "live" });
    try {
      for (const p of PROVIDERS) {
        const text = await (
          await post(ok, p.path, `${TASK}-ok-${p.name}`, p.body(scriptMessage(["say: Hi."])))
        ).text();
        expect(text).toContain(p.terminal);
        expect(text).not.toContain(p.error);
      }
    } finally {
      await ok.close();
    }
  });
});

describe("client disconnect", () => {
  let upstream: Server;
  let upstreamUrl: string;
  let upstreamClosed: Promise<void>;
  beforeAll(async () => {
    let markClosed: () => void = () => {};
    upstreamClosed = new Promise((r) => {
      markClosed = r;
    });
    // A vLLM-shaped stream that never ends on its own: one token every 20 ms.
    upstream = createServer((req, res) => {
      req.resume();
      // Only the chat call streams; the model list (context length) is not served.
      if (req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const base = { id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "m" };
      res.write(
        `data: ${JSON.stringify({ ...base, prompt_token_ids: [1, 2, 3], choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] })}\n\n`,
      );
      let n = 0;
      const timer = setInterval(() => {
        n++;
        const choice = {
          index: 0,
          delta: { content: `t${n} ` },
          logprobs: { content: [{ token: `t${n}`, logprob: -0.5 }] },
          finish_reason: null,
          token_ids: [100 + n],
        };
        res.write(`data: ${JSON.stringify({ ...base, choices: [choice] })}\n\n`);
      }, 20);
      res.on("close", () => {
        clearInterval(timer);
        markClosed();
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it("aborts the upstream call and stores the partial answer as an aborted capture", async () => {
    const store: ObjectStore = new MemoryStore();
    const proxy = await startProxy({ upstream: upstreamUrl, store, streamMode: "live", log: () => {} });
    try {
      const session = `${TASK}-gone`;
      const client = new AbortController();
      const res = await post(
        proxy,
        "/v1/chat/completions",
        session,
        PROVIDERS[0].body("go on forever"),
        client.signal,
      );
      const reader = res.body!.getReader();
      let seen = "";
      while (!seen.includes("t3 ")) seen += new TextDecoder().decode((await reader.read()).value);
      client.abort();
      await upstreamClosed;
      let caps = await readCaptures(store, LOCAL_TASK_ID, session);
      for (let i = 0; i < 100 && caps.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        caps = await readCaptures(store, LOCAL_TASK_ID, session);
      }
      expect(caps).toHaveLength(1);
      const [cap] = caps;
      expect(cap.stream_status).toBe("aborted");
      expect(cap.prompt_token_ids).toEqual([1, 2, 3]);
      expect(cap.response_token_ids!.length).toBeGreaterThanOrEqual(3);
      expect(cap.response_token_ids!.slice(0, 3)).toEqual([101, 102, 103]);
      expect(usableCaptures(caps)).toMatchObject({ turns: [], excludedStreamIncomplete: 1 });
    } finally {
      await proxy.close();
    }
  });
});

describe("streamed ids that do not add up (vllm#27482)", () => {
  let buggy: PolicyServer;
  beforeAll(async () => {
    buggy = await startPolicy({ dropToolCallIds: true });
  });
  afterAll(() => buggy?.close());

  const tools = [
    {
      type: "function",
      function: {
        name: "shell",
        parameters: { type: "object", properties: { command: { type: "string" } } },
      },
    },
  ];
  const call = (session: string) => ({
    model: "m",
    stream: true,
    tools,
    messages: [{ role: "user", content: scriptMessage(["shell: ls", "say: Done."]) }],
    session,
  });

  for (const [upstreamName, expected] of [
    ["the buggy engine", "ids_incomplete"],
    ["a correct engine", "complete"],
  ] as const) {
    it(`${upstreamName}: the capture is ${expected}`, async () => {
      const store = new MemoryStore();
      const up = upstreamName === "the buggy engine" ? buggy : policy;
      const proxy = await startProxy({ upstream: up.url, store, streamMode: "live", log: () => {} });
      try {
        const session = `${TASK}-ids-${expected}`;
        const { session: _s, ...body } = call(session);
        const text = await (await post(proxy, "/v1/chat/completions", session, body)).text();
        // The harness still gets its whole answer, tool call included.
        expect(text).toContain('"name":"shell"');
        expect(text).toContain("data: [DONE]");
        const caps = await readCaptures(store, LOCAL_TASK_ID, session);
        expect(caps).toHaveLength(1);
        expect(caps[0].stream_status).toBe(expected);
        expect(caps[0].finish_reason).toBe("tool_calls");
        expect(usableCaptures(caps).turns).toHaveLength(expected === "complete" ? 1 : 0);
      } finally {
        await proxy.close();
      }
    });
  }
});

describe("frames are written together within the flush interval", () => {
  let paced: PolicyServer;
  beforeAll(async () => {
    // 40 tokens at 200 tokens/s: the whole answer comes within 200 ms.
    paced = await startPolicy({ tokensPerSecond: 200 });
  });
  afterAll(() => paced?.close());

  /** How many of the client's reads carry generated text, and the whole text. */
  async function readsWithText(flushMs: number): Promise<{ reads: number; text: string; ids: number }> {
    const store = new MemoryStore();
    const proxy = await startProxy({
      upstream: paced.url,
      store,
      streamMode: "live",
      streamFlushMs: flushMs,
      log: () => {},
    });
    try {
      const session = `${TASK}-flush-${flushMs}`;
      const body = {
        model: "m",
        stream: true,
        max_tokens: 40,
        messages: [
          { role: "user", content: scriptMessage([`say: ${"one two three four five ".repeat(20)}`]) },
        ],
      };
      const res = await post(proxy, "/v1/chat/completions", session, body);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let reads = 0;
      let text = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const part = decoder.decode(value, { stream: true });
        if (part.includes('"content":"') && !/"content":""/.test(part.split("\n")[0] ?? "")) reads++;
        text += part;
      }
      const [cap] = await readCaptures(store, LOCAL_TASK_ID, session);
      return { reads, text, ids: cap.response_token_ids?.length ?? 0 };
    } finally {
      await proxy.close();
    }
  }

  it("one write per chunk with 0 ms, a few writes with a long interval (the end never held), the same answer and capture", async () => {
    const each = await readsWithText(0);
    // A minute-long interval: were the end of the answer held for it, the test would time out.
    const held = await readsWithText(60_000);
    expect(each.ids).toBe(40);
    expect(held.ids).toBe(40);
    const content = (t: string) => [...t.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join("");
    expect(content(held.text)).toBe(content(each.text));
    expect(held.text).toContain("data: [DONE]");
    expect(each.reads).toBeGreaterThanOrEqual(10);
    expect(held.reads).toBeLessThanOrEqual(3);
  });
});

describe("the AI SDK (OpenCode's provider) reads a live stream as it reads a synthesized one", () => {
  const tools = {
    shell: {
      type: "function" as const,
      name: "shell",
      inputSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    },
  };

  async function run(mode: "live" | "synthesize", script: string[]) {
    const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
    const store = new MemoryStore();
    const proxy = await startProxy({ upstream: policy.url, store, streamMode: mode, log: () => {} });
    try {
      const session = `${TASK}-aisdk-${mode}-${script.length}`;
      const model = createOpenAICompatible({
        name: "polar",
        baseURL: `${proxy.url}/v1`,
        apiKey: session,
        includeUsage: true,
      }).chatModel("polar-policy");
      const { stream } = await model.doStream({
        prompt: [{ role: "user", content: [{ type: "text", text: scriptMessage(script) }] }],
        tools: [tools.shell],
      });
      // biome-ignore lint/suspicious/noExplicitAny: the stream parts are a union the test walks
      const parts: any[] = await readAll(stream);
      const [cap] = await readCaptures(store, LOCAL_TASK_ID, session);
      return { parts, cap };
    } finally {
      await proxy.close();
    }
  }

  for (const script of [["think: a plan", "say: Hello there."], ["shell: ls -la"]]) {
    it(`${script.join(" / ")}: same parts, same capture`, async () => {
      const live = await run("live", script);
      const synth = await run("synthesize", script);
      for (const r of [live, synth]) expect(r.parts.filter((p) => p.type === "error")).toEqual([]);
      const view = (parts: typeof live.parts) => ({
        text: parts
          .filter((p) => p.type === "text-delta")
          .map((p) => p.delta)
          .join(""),
        reasoning: parts
          .filter((p) => p.type === "reasoning-delta")
          .map((p) => p.delta)
          .join(""),
        calls: parts.filter((p) => p.type === "tool-call").map((p) => [p.toolName, p.input]),
        finish: parts.find((p) => p.type === "finish")?.finishReason.unified,
        usage: parts.find((p) => p.type === "finish")?.usage.outputTokens.total,
      });
      expect(view(live.parts)).toEqual(view(synth.parts));
      expect(view(live.parts).finish).toBe(script[0].startsWith("shell") ? "tool-calls" : "stop");
      expect(JSON.stringify(view(live.parts))).toMatch(/Hello there\.|ls -la/);
      expect(live.cap.stream_status).toBe("complete");
      for (const k of [
        "prompt_token_ids",
        "response_token_ids",
        "response_logprobs",
        "finish_reason",
      ] as const)
        expect(live.cap[k], k).toEqual(synth.cap[k]);
    });
  }
});
