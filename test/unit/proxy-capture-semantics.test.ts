import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createProxyApp } from "../../proxy-worker/app.ts";
import type { ProxyDeps } from "../../proxy-worker/deps.ts";
import { decodeCapture } from "../../shared/capture-codec.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

/**
 * What every capture records besides the ids: the sampling actually sent (with the task's
 * overrides), the logprob semantics, the policy version at start and end, the parallel-tool
 * switch, and an id-less upstream answer counted at /metrics.
 */
const KEY = "capture-semantics-key";
const fixture = (name: string) =>
  JSON.parse(
    readFileSync(new URL(`../../proxy-worker/engines/__fixtures__/${name}`, import.meta.url), "utf8"),
  );

function vllmAnswer(logprobs = [-0.5, -0.25]) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "m",
    prompt_token_ids: [1, 2, 3],
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "ok" },
        finish_reason: "stop",
        token_ids: [7, 8],
        logprobs: { content: logprobs.map((logprob, i) => ({ token: String(i), logprob })) },
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  };
}

/** An upstream stub: /v1/models answers, every chat body is kept, `answer` may act mid-call. */
function stubUpstream(answer: (body: Record<string, unknown>) => unknown | Promise<unknown>) {
  const bodies: Record<string, unknown>[] = [];
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    if (url.endsWith("/v1/models")) {
      return Response.json({ object: "list", data: [{ id: "m", max_model_len: 32768 }] });
    }
    const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
    bodies.push(body);
    return Response.json(await answer(body));
  }) as typeof fetch;
  return { bodies, upstream: { baseUrl: "http://127.0.0.1:9", fetch: fetchFn } };
}

function makeApp(answer: Parameters<typeof stubUpstream>[0], extra: Partial<ProxyDeps> = {}) {
  const up = stubUpstream(answer);
  const store = new MemoryStore();
  const logs: string[] = [];
  const app = createProxyApp({
    store,
    upstream: up.upstream,
    auth: "off",
    log: (m) => logs.push(m),
    ...extra,
  });
  return { app, store, bodies: up.bodies, logs };
}

async function onlyCapture(store: MemoryStore): Promise<CaptureRecord> {
  const keys = await store.list("");
  const captures = keys.filter((k) => k.startsWith("captures/"));
  expect(captures).toHaveLength(1);
  return decodeCapture((await store.get(captures[0])) as Uint8Array);
}

const chat = (extra: Record<string, unknown> = {}, key = "s1") => ({
  method: "POST",
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra }),
});

const TOOL = {
  type: "function",
  function: { name: "shell", parameters: { type: "object", properties: {} } },
};

describe("sampling semantics", () => {
  it("applies the task's agent.sampling from the session token over what the harness sent", async () => {
    const { app, store, bodies } = makeApp(() => vllmAnswer(), { auth: "token", signingKey: KEY });
    const token = await mintSessionToken(
      {
        sessionId: "s1",
        taskId: "t1",
        sampling: { temperature: 0.6, top_k: 20, min_p: 0, max_tokens: 100 },
      },
      KEY,
    );
    const res = await app.request(
      "/v1/chat/completions",
      chat({ temperature: 1.2, max_tokens: 5000 }, token),
    );
    expect(res.status).toBe(200);
    expect(bodies[0]).toMatchObject({ temperature: 0.6, top_k: 20, min_p: 0, max_tokens: 100 });
    const cap = await onlyCapture(store);
    expect(cap.sampling).toEqual({
      params: { temperature: 0.6, top_k: 20, min_p: 0, max_tokens: 100 },
      task_overrides: ["temperature", "top_k", "min_p", "max_tokens"],
      logprobs_mode: "raw_logprobs",
    });
  });

  it("sends the task's cache_salt to the engine on every call, over the harness's", async () => {
    // prime-rl salts each policy step so that KV blocks of old weights never serve new prompts.
    const { app, bodies } = makeApp(() => vllmAnswer(), { auth: "token", signingKey: KEY });
    const token = await mintSessionToken(
      { sessionId: "s1", taskId: "t1", sampling: { cache_salt: "step-3" } },
      KEY,
    );
    await app.request("/v1/chat/completions", chat({}, token));
    await app.request("/v1/chat/completions", chat({ cache_salt: "stale" }, token));
    expect(bodies.map((b) => (b as { cache_salt?: string }).cache_salt)).toEqual(["step-3", "step-3"]);
  });

  it("keeps a harness max_tokens below the task's cap and records only what was sent", async () => {
    const { app, store, bodies } = makeApp(() => vllmAnswer(), { auth: "token", signingKey: KEY });
    const token = await mintSessionToken(
      { sessionId: "s1", taskId: "t1", sampling: { max_tokens: 100 } },
      KEY,
    );
    await app.request("/v1/chat/completions", chat({ max_tokens: 40, top_p: 0.9 }, token));
    expect(bodies[0]).toMatchObject({ max_tokens: 40, top_p: 0.9 });
    expect((await onlyCapture(store)).sampling).toEqual({
      params: { top_p: 0.9, max_tokens: 40 },
      task_overrides: [],
      logprobs_mode: "raw_logprobs",
    });
  });

  it("caps a harness's max_completion_tokens at the task's max_tokens too (a trainer's response budget)", async () => {
    // vLLM reads max_completion_tokens before max_tokens: a larger one left in the body would undo the cap.
    const { app, store, bodies } = makeApp(() => vllmAnswer(), { auth: "token", signingKey: KEY });
    const token = await mintSessionToken(
      { sessionId: "s1", taskId: "t1", sampling: { max_tokens: 100 } },
      KEY,
    );
    await app.request("/v1/chat/completions", chat({ max_completion_tokens: 5000 }, token));
    expect(bodies[0]).toMatchObject({ max_tokens: 100 });
    expect(
      (bodies[0] as { max_completion_tokens?: number }).max_completion_tokens ?? 100,
    ).toBeLessThanOrEqual(100);
    expect((await onlyCapture(store)).sampling?.task_overrides).toContain("max_tokens");
  });

  it("records the settings that reshape the sampled distribution, so a trainer's logprob check sees them", async () => {
    // vLLM's raw logprobs come before logit bias, grammars and a forced tool call: a trainer that
    // cannot see them would take raw logprobs for the sampler's (adapters/behaviour_logprobs.py).
    const { app, store } = makeApp(() => vllmAnswer());
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    await app.request(
      "/v1/chat/completions",
      chat({
        logit_bias: { "42": 5 },
        tools,
        tool_choice: { type: "function", function: { name: "f" } },
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
      }),
    );
    expect((await onlyCapture(store)).sampling?.params).toMatchObject({
      logit_bias: '{"42":5}',
      tool_choice: "function",
      response_format: "json_schema",
    });
  });

  it("records the engine's logprob mode, or the operator's", async () => {
    const sglang = makeApp(() => fixture("sglang-token-ids.json"), { engine: "sglang" });
    await sglang.app.request("/v1/chat/completions", chat());
    expect((await onlyCapture(sglang.store)).sampling?.logprobs_mode).toBe("temperature_scaled");
    const processed = makeApp(() => vllmAnswer(), { logprobsMode: "processed_logprobs" });
    await processed.app.request("/v1/chat/completions", chat());
    expect((await onlyCapture(processed.store)).sampling?.logprobs_mode).toBe("processed_logprobs");
  });

  it("treats vLLM's -9999.0 placeholder logprob as missing", async () => {
    const { app, store } = makeApp(() => vllmAnswer([-0.5, -9999.0]));
    await app.request("/v1/chat/completions", chat());
    const cap = await onlyCapture(store);
    expect(cap.response_token_ids).toEqual([7, 8]);
    expect(cap.response_logprobs).toBeNull();
  });
});

describe("policy version per call", () => {
  it("stamps the version at request start and at response end across an update mid-call", async () => {
    let app: ReturnType<typeof createProxyApp>;
    const made = makeApp(
      async () => {
        // The weights change while the engine generates.
        const r = await app.request("/admin/policy-version", {
          method: "POST",
          headers: { authorization: "Bearer adm" },
          body: JSON.stringify({ version: "v2" }),
        });
        expect(r.status).toBe(200);
        return vllmAnswer();
      },
      { adminToken: "adm", policyVersion: "v1" },
    );
    app = made.app;
    expect((await app.request("/v1/chat/completions", chat())).status).toBe(200);
    const cap = await onlyCapture(made.store);
    expect(cap.policy_version).toBe("v1");
    expect(cap.policy_version_end).toBe("v2");
  });

  it("takes the engine's per-token version spans when SGLang reports them", async () => {
    const { app, store } = makeApp(() => fixture("sglang-response-token-ids.json"), {
      engine: "sglang",
      policyVersion: "configured",
    });
    await app.request("/v1/chat/completions", chat());
    const cap = await onlyCapture(store);
    expect(cap.policy_version).toBe("step-3");
    expect(cap.policy_version_end).toBe("step-4");
  });
});

describe("parallel tool calls", () => {
  const requests: [string, string, Record<string, unknown>, Record<string, string>][] = [
    [
      "anthropic",
      "/v1/messages",
      {
        model: "m",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
        tools: [{ name: "shell", input_schema: { type: "object", properties: {} } }],
        tool_choice: { type: "auto", disable_parallel_tool_use: true },
      },
      { "anthropic-version": "2023-06-01", "x-api-key": "s1" },
    ],
    [
      "openai_chat",
      "/v1/chat/completions",
      { model: "m", messages: [{ role: "user", content: "hi" }], tools: [TOOL], parallel_tool_calls: false },
      { authorization: "Bearer s1" },
    ],
    [
      "openai_responses",
      "/v1/responses",
      {
        model: "m",
        input: "hi",
        tools: [{ type: "function", name: "shell", parameters: { type: "object", properties: {} } }],
        parallel_tool_calls: false,
      },
      { authorization: "Bearer s1" },
    ],
  ];
  for (const [provider, path, body, headers] of requests) {
    it(`marks the capture when a ${provider} client disables parallel tool use`, async () => {
      const off = makeApp(() => vllmAnswer());
      const res = await off.app.request(path, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      expect((await onlyCapture(off.store)).parallel_tool_calls_disabled).toBe(true);
    });
  }

  it("leaves it unset when the client allows parallel calls", async () => {
    const { app, store } = makeApp(() => vllmAnswer());
    await app.request("/v1/chat/completions", chat({ tools: [TOOL], parallel_tool_calls: true }));
    expect((await onlyCapture(store)).parallel_tool_calls_disabled).toBe(false);
  });
});

describe("id-less upstream answers", () => {
  it("are captured, logged and counted at /metrics", async () => {
    const { app, store, logs } = makeApp(() => fixture("sglang-no-ids.json"), { engine: "sglang" });
    const res = await app.request("/v1/chat/completions", chat());
    expect(res.status).toBe(200);
    const cap = await onlyCapture(store);
    expect(cap.response_token_ids).toBeNull();
    expect(cap.policy_version).toBe("default");
    expect(logs.join("\n")).toMatch(/without prompt and response token ids/);
    const metrics = await (await app.request("/metrics")).text();
    expect(metrics).toContain("# TYPE polar_proxy_captures_without_ids_total counter");
    expect(metrics).toContain(
      'polar_proxy_captures_without_ids_total{engine="sglang",provider="openai_chat",missing="both"} 1',
    );
    expect(metrics).toContain('polar_proxy_captures_total{engine="sglang",provider="openai_chat"} 1');
  });

  it("are not counted when the engine reports ids", async () => {
    const { app, logs } = makeApp(() => vllmAnswer());
    await app.request("/v1/chat/completions", chat());
    expect(await (await app.request("/metrics")).text()).not.toContain(
      "polar_proxy_captures_without_ids_total{",
    );
    expect(logs).toEqual([]);
  });
});
