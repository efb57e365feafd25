import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Provider } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * Bad input never crashes the proxy, never gets a 5xx, and never reaches the upstream: every
 * answer without an `x-polar-capture-id` header must leave the policy's request counters unchanged.
 */
const KEY = "bad-input-signing-key";
let policy: PolicyServer;
let proxy: TestProxy;
let token: string;

beforeAll(async () => {
  policy = await startPolicy();
  proxy = await startProxy({ upstream: policy.url, auth: { signingKey: KEY } });
  token = await mintSessionToken({ sessionId: "bad-input", taskId: "bad-input-task" }, KEY);
});
afterAll(async () => {
  await proxy?.close();
  await policy?.close();
});

const ENDPOINTS: { provider: Provider; path: string; keys: string[] }[] = [
  {
    provider: "anthropic",
    path: "/v1/messages",
    keys: ["model", "max_tokens", "messages", "system", "tools", "stream", "thinking"],
  },
  {
    provider: "anthropic",
    path: "/v1/messages/count_tokens",
    keys: ["model", "messages", "system", "tools"],
  },
  {
    provider: "openai_chat",
    path: "/v1/chat/completions",
    keys: ["model", "messages", "tools", "stream", "n", "max_tokens", "logprobs"],
  },
  {
    provider: "openai_responses",
    path: "/v1/responses",
    keys: ["model", "input", "instructions", "tools", "stream", "max_output_tokens", "reasoning"],
  },
  {
    provider: "google",
    path: "/v1beta/models/policy:generateContent",
    keys: ["contents", "systemInstruction", "tools", "generationConfig"],
  },
  {
    provider: "google",
    path: "/v1beta/models/policy:streamGenerateContent?alt=sse",
    keys: ["contents", "generationConfig"],
  },
];

function upstreamCalls(): number {
  return policy.counts.chat_completions + policy.counts.tokenize;
}

/** The provider's error envelope, with a message a user can act on. */
function expectErrorShape(provider: Provider, body: unknown) {
  const b = body as Record<string, Record<string, unknown>>;
  if (provider === "anthropic") {
    expect(b.type).toBe("error");
    expect(typeof b.error.type).toBe("string");
  } else if (provider === "google") {
    expect(typeof b.error.code).toBe("number");
    expect(typeof b.error.status).toBe("string");
  }
  expect(typeof b.error.message).toBe("string");
  expect((b.error.message as string).length).toBeGreaterThan(0);
}

async function send(path: string, body: BodyInit, headers: Record<string, string> = {}) {
  const before = upstreamCalls();
  const res = await fetch(proxy.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
    body,
  });
  const text = await res.text();
  return { res, text, upstreamDelta: upstreamCalls() - before };
}

/** The invariant every answer must hold. Returns the parsed body. */
function checkAnswer(provider: Provider, r: Awaited<ReturnType<typeof send>>): unknown {
  expect(r.res.status, r.text).toBeLessThan(500);
  const captured = r.res.headers.has("x-polar-capture-id");
  if (r.res.status >= 400 && !captured && !r.res.headers.get("content-type")?.includes("event-stream")) {
    expect(r.upstreamDelta, `rejected input reached the upstream: ${r.text}`).toBe(0);
    const body = JSON.parse(r.text);
    expectErrorShape(provider, body);
    return body;
  }
  return null;
}

describe("fast-check: arbitrary bodies on every endpoint", () => {
  for (const ep of ENDPOINTS) {
    it(`${ep.path}: any JSON, and schema-shaped objects with wrong types`, async () => {
      const shaped = fc.dictionary(fc.constantFrom(...ep.keys), fc.jsonValue({ maxDepth: 3 }), {
        maxKeys: ep.keys.length,
      });
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue({ maxDepth: 3 }), shaped), async (value) => {
          const r = await send(ep.path, JSON.stringify(value));
          checkAnswer(ep.provider, r);
        }),
        { numRuns: 40 },
      );
    });
  }
});

describe("hand-written bad input", () => {
  it("truncated JSON, empty body, invalid UTF-8: 400 in each provider's shape", async () => {
    for (const ep of ENDPOINTS) {
      for (const body of [
        '{"model": "policy", "messages": [{"role": "us',
        "",
        new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      ]) {
        const r = await send(ep.path, body);
        expect(r.res.status, `${ep.path} ${r.text}`).toBe(400);
        checkAnswer(ep.provider, r);
      }
    }
  });

  it("wrong field types: 400 naming the field", async () => {
    const r = await send(
      "/v1/messages",
      JSON.stringify({ model: "policy", max_tokens: "many", messages: [] }),
    );
    expect(r.res.status).toBe(400);
    const body = checkAnswer("anthropic", r) as { error: { message: string } };
    expect(body.error.message).toMatch(/max_tokens/);
    const g = await send("/v1beta/models/policy:generateContent", JSON.stringify({ contents: "not-a-list" }));
    expect(g.res.status).toBe(400);
    checkAnswer("google", g);
  });

  it("n > 1 is refused with an explanation", async () => {
    const r = await send(
      "/v1/chat/completions",
      JSON.stringify({ model: "policy", n: 3, messages: [{ role: "user", content: "hi" }] }),
    );
    expect(r.res.status).toBe(400);
    expect((checkAnswer("openai_chat", r) as { error: { message: string } }).error.message).toMatch(/n=3/);
  });

  it("a 40 MiB body gets 413, with content-length and when streamed without one", async () => {
    const big = new Uint8Array(40 * 1024 * 1024).fill(0x20);
    const r = await send("/v1/messages", big, { "anthropic-version": "2023-06-01" });
    expect(r.res.status).toBe(413);
    checkAnswer("anthropic", r);

    const mib = new Uint8Array(1024 * 1024).fill(0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < 40) c.enqueue(mib);
        else c.close();
      },
    });
    const before = upstreamCalls();
    const res = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expectErrorShape("openai_chat", await res.json());
    expect(upstreamCalls()).toBe(before);
  });

  it("missing, bad and expired tokens get 401 in the provider's shape, in every key position", async () => {
    const body = JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }] });
    const expired = await mintSessionToken(
      { sessionId: "x", taskId: "y", ttlSeconds: 1, now: Date.now() - 60_000 },
      KEY,
    );
    const cases: [string, Record<string, string>, Provider][] = [
      ["/v1/chat/completions", { authorization: "" }, "openai_chat"],
      ["/v1/chat/completions", { authorization: "Bearer garbage" }, "openai_chat"],
      [
        "/v1/messages",
        { authorization: "", "x-api-key": expired, "anthropic-version": "2023-06-01" },
        "anthropic",
      ],
      ["/v1beta/models/policy:generateContent?key=garbage", { authorization: "" }, "google"],
      [`/s/${expired}/v1/responses`, { authorization: "" }, "openai_responses"],
    ];
    for (const [path, headers, provider] of cases) {
      const r = await send(path, body, headers);
      expect(r.res.status, path).toBe(401);
      checkAnswer(provider, r);
    }
  });

  it("unknown paths and methods get 404 in the likely shape", async () => {
    for (const [path, provider, headers] of [
      ["/v1/completions", "openai_chat", {}],
      ["/v1/messages/batches", "anthropic", { "anthropic-version": "2023-06-01" }],
      ["/v1beta/models/policy:embedContent", "google", {}],
    ] as const) {
      const r = await send(path, "{}", headers);
      expect(r.res.status, path).toBe(404);
      checkAnswer(provider, r);
    }
    const get = await fetch(`${proxy.url}/v1/chat/completions`);
    expect(get.status).toBe(404);
  });
});
