import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLICY_SHAPES } from "../../dry-run-policy/shapes.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * The proxy against the dry-run policy in every engine layout it can answer in (vLLM, the newest
 * SGLang, SGLang after PR #30917, SGLang before it), through all four provider APIs: every
 * capture must carry the exact ids and logprobs the vLLM layout gives for the same body, and a
 * weight version (the engine's for SGLang, the proxy's configured one for vLLM).
 */
const PROMPT = scriptMessage(["think: A short answer will do.", "say: All done."], "Answer briefly.");
const CALLS: {
  provider: CaptureRecord["provider"];
  path: string;
  headers: Record<string, string>;
  body: object;
}[] = [
  {
    provider: "anthropic",
    path: "/v1/messages",
    headers: { "anthropic-version": "2023-06-01" },
    body: { model: "policy", max_tokens: 512, messages: [{ role: "user", content: PROMPT }] },
  },
  {
    provider: "openai_chat",
    path: "/v1/chat/completions",
    headers: {},
    body: { model: "policy", messages: [{ role: "user", content: PROMPT }] },
  },
  {
    provider: "openai_responses",
    path: "/v1/responses",
    headers: {},
    body: { model: "policy", input: PROMPT },
  },
  {
    provider: "google",
    path: "/v1beta/models/policy:generateContent",
    headers: {},
    body: { contents: [{ role: "user", parts: [{ text: PROMPT }] }] },
  },
];

let reference: PolicyServer;
beforeAll(async () => {
  reference = await startPolicy();
});
afterAll(async () => {
  await reference?.close();
});

for (const shape of POLICY_SHAPES) {
  describe(`proxy with the policy in the ${shape} layout`, () => {
    let policy: PolicyServer;
    let proxy: TestProxy;
    const engine = shape === "vllm" ? "vllm" : "sglang";
    const version = shape === "vllm" ? "proxy-configured" : "sgl-step-5";
    beforeAll(async () => {
      policy = await startPolicy({ shape, weightVersion: "sgl-step-5" });
      proxy = await startProxy({
        upstream: policy.url,
        auth: "off",
        engine,
        policyVersion: "proxy-configured",
      });
    });
    afterAll(async () => {
      await proxy?.close();
      await policy?.close();
    });

    for (const call of CALLS) {
      it(`captures ids, logprobs and the weight version for ${call.provider}`, async () => {
        const session = `${shape}-${call.provider}`;
        const res = await fetch(`${proxy.url}${call.path}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": session, ...call.headers },
          body: JSON.stringify(call.body),
        });
        const text = await res.text();
        expect(res.status, text).toBe(200);
        // The reasoning reaches the client whichever field the engine put it in (Gemini shows
        // thoughts only with thinkingConfig.includeThoughts).
        if (call.provider !== "google") expect(text).toContain("A short answer will do.");
        expect(text).toContain("All done.");
        const [cap] = await readCaptures(proxy.store, "local", session);
        expect(cap).toMatchObject({ provider: call.provider, error: null });
        const direct = (await (
          await fetch(`${reference.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(cap.chat_request),
          })
        ).json()) as {
          prompt_token_ids: number[];
          choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
        };
        expect(cap.prompt_token_ids).toEqual(direct.prompt_token_ids);
        expect(cap.response_token_ids).toEqual(direct.choices[0].token_ids);
        expect(cap.response_token_ids?.length).toBeGreaterThan(0);
        expect(cap.response_logprobs).toEqual(
          direct.choices[0].logprobs.content.map((c) => Math.fround(c.logprob)),
        );
        expect(cap.policy_version).toBe(version);
        expect(cap.policy_version_end).toBe(version);
        expect(cap.sampling?.logprobs_mode).toBe(engine === "vllm" ? "raw_logprobs" : "temperature_scaled");
      });
    }
  });
}

describe("a weight update while the upstream generates", () => {
  it("gives the capture two versions: at request start and at response end", async () => {
    const { createServer } = await import("node:http");
    let proxy: TestProxy | undefined;
    // A slow upstream on 127.0.0.1: it lets the trainer publish new weights, then answers.
    const stub = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      if (req.url === "/v1/chat/completions" && proxy) {
        const r = await fetch(`${proxy.url}/admin/policy-version`, {
          method: "POST",
          headers: { authorization: "Bearer adm" },
          body: JSON.stringify({ version: "step-2" }),
        });
        expect(r.status).toBe(200);
      }
      const upstream = await fetch(`${reference.url}${req.url}`, {
        method: req.method,
        headers: { "content-type": "application/json" },
        body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
      });
      res.writeHead(upstream.status, { "content-type": "application/json" });
      res.end(await upstream.text());
    });
    await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
    const port = (stub.address() as { port: number }).port;
    try {
      proxy = await startProxy({
        upstream: `http://127.0.0.1:${port}`,
        auth: "off",
        adminToken: "adm",
        policyVersion: "step-1",
      });
      const res = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer mid-call" },
        body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: PROMPT }] }),
      });
      expect(res.status).toBe(200);
      const [cap] = await readCaptures(proxy.store, "local", "mid-call");
      expect(cap.response_token_ids?.length).toBeGreaterThan(0);
      expect(cap.policy_version).toBe("step-1");
      expect(cap.policy_version_end).toBe("step-2");
    } finally {
      await proxy?.close();
      await new Promise((resolve) => stub.close(resolve));
    }
  });
});
