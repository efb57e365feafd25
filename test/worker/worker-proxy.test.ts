import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeCapture } from "../../shared/capture-codec.ts";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { sha256Hex } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { screenshotPng } from "../support/png.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { startWorkers, type WorkerHost } from "./worker-host.ts";

// The Worker build in workerd (Miniflare) against the dry-run policy: every provider API, a stream,
// and captures landing in an R2 binding and, through the S3 API, in s3rver.
const KEY = "worker-test-signing-key";
let policy: PolicyServer;
let s3: RunningS3rver;
let host: WorkerHost;

beforeAll(async () => {
  [policy, s3] = await Promise.all([startPolicy(), startS3rver({ bucket: "worker-captures" })]);
  const common = { UPSTREAM_URL: policy.url, POLAR_SIGNING_KEY: KEY };
  host = await startWorkers([
    { name: "on-r2", vars: { ...common, STORE: "r2", R2_PREFIX: "polar" }, r2: true },
    {
      name: "on-s3",
      vars: {
        ...common,
        STORE: "s3",
        S3_BUCKET: s3.bucket,
        S3_PREFIX: "runs/w",
        S3_ENDPOINT: s3.endpoint,
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      },
    },
    { name: "misconfigured", vars: { STORE: "r2", UPSTREAM_URL: "not a url" } },
  ]);
});

afterAll(async () => {
  await host?.dispose();
  await Promise.all([policy?.close(), s3?.stop()]);
});

const token = (sessionId: string) => mintSessionToken({ sessionId, taskId: "wt", ttlSeconds: 600 }, KEY);

async function r2Captures(sessionId: string): Promise<CaptureRecord[]> {
  const bucket = await host.mf.getR2Bucket("CAPTURES", "on-r2");
  const listed = await bucket.list({ prefix: `polar/${keys.capturesOfSession("wt", sessionId)}` });
  const out: CaptureRecord[] = [];
  for (const object of listed.objects) {
    const body = await bucket.get(object.key);
    if (body) out.push(await decodeCapture(new Uint8Array(await body.arrayBuffer())));
  }
  return out;
}

function expectTrainable(capture: CaptureRecord, provider: string) {
  expect(capture.provider).toBe(provider);
  expect(capture.session_id).toBeTruthy();
  expect(capture.prompt_token_ids?.length ?? 0).toBeGreaterThan(5);
  expect(capture.response_token_ids?.length ?? 0).toBeGreaterThan(0);
  expect(capture.response_logprobs?.length).toBe(capture.response_token_ids?.length);
}

describe("Worker on workerd with an R2 binding", () => {
  it("answers OpenAI Chat Completions and captures the call to R2", async () => {
    const res = await host.fetch("on-r2", "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("chat")}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe("chat.completion");
    expect(body.choices[0].message.content).toContain("Hello from the Polar dry-run policy");
    expect(body).not.toHaveProperty("prompt_token_ids");
    const [capture] = await r2Captures("chat");
    expectTrainable(capture, "openai_chat");
    expect(res.headers.get("x-polar-capture-id")).toBe(capture.capture_id);
  });

  it("answers Anthropic Messages, OpenAI Responses and Google generateContent in their own shapes", async () => {
    const anthropic = await host.fetch("on-r2", "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": await token("anthropic"), "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "policy", max_tokens: 200, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(anthropic.status).toBe(200);
    const a = await anthropic.json();
    expect(a).toMatchObject({ type: "message", role: "assistant" });
    expect(a.content[0].text).toContain("Hello from the Polar dry-run policy");

    const responses = await host.fetch("on-r2", "/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("responses")}` },
      body: JSON.stringify({ model: "policy", input: "hi" }),
    });
    expect(responses.status).toBe(200);
    const r = await responses.json();
    expect(r.object).toBe("response");
    expect(JSON.stringify(r.output)).toContain("Hello from the Polar dry-run policy");

    const google = await host.fetch("on-r2", "/v1beta/models/policy:generateContent", {
      method: "POST",
      headers: { "x-goog-api-key": await token("google") },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    expect(google.status).toBe(200);
    const g = await google.json();
    expect(g.candidates[0].content.parts[0].text).toContain("Hello from the Polar dry-run policy");

    expectTrainable((await r2Captures("anthropic"))[0], "anthropic");
    expectTrainable((await r2Captures("responses"))[0], "openai_responses");
    expectTrainable((await r2Captures("google"))[0], "google");
  });

  it("stores a re-sent screenshot once in R2 and refuses an undecodable one (docs/computer-use.md)", async () => {
    const png = screenshotPng(7);
    const image = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: bytesToBase64(png) },
    };
    const call = (content: unknown[]) =>
      token("screens").then((t) =>
        host.fetch("on-r2", "/v1/messages", {
          method: "POST",
          headers: { "x-api-key": t, "anthropic-version": "2023-06-01", "content-type": "application/json" },
          body: JSON.stringify({ model: "policy", max_tokens: 16, messages: [{ role: "user", content }] }),
        }),
      );
    for (const n of [1, 2])
      expect((await call([{ type: "text", text: `look ${n}` }, image, image])).status).toBe(200);
    const bad = await call([
      { type: "image", source: { type: "base64", media_type: "image/png", data: "%%%" } },
    ]);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toContain("does not decode as base64");
    const bucket = await host.mf.getR2Bucket("CAPTURES", "on-r2");
    const blobs = (await bucket.list({ prefix: "polar/blobs/sha256/" })).objects.map((o) => o.key);
    expect(blobs).toEqual([`polar/${keys.imageBlob(await sha256Hex(png))}`]);
    const stored = await bucket.get(blobs[0]);
    expect(new Uint8Array(await (stored as { arrayBuffer(): Promise<ArrayBuffer> }).arrayBuffer())).toEqual(
      png,
    );
    const captures = await r2Captures("screens");
    expect(captures).toHaveLength(2);
    for (const c of captures) expect(c.image_refs?.filter((r) => r.field === "chat_request")).toHaveLength(2);
  });

  it("streams an Anthropic answer as SSE events, with the capture stored", async () => {
    const res = await host.fetch("on-r2", "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": await token("stream"), "anthropic-version": "2023-06-01" },
      body: JSON.stringify({
        model: "policy",
        max_tokens: 200,
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const text = await res.text();
    const events = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(events[0]).toBe("message_start");
    expect(events.at(-1)).toBe("message_stop");
    const deltas = [...text.matchAll(/^data: (.*)$/gm)]
      .map((m) => JSON.parse(m[1]))
      .filter((d) => d.type === "content_block_delta")
      .map((d) => d.delta.text)
      .join("");
    expect(deltas).toContain("Hello from the Polar dry-run policy");
    const [capture] = await r2Captures("stream");
    expect(capture.stream).toBe(true);
    // Live by default with vLLM: the Worker streamed the engine's answer (TransformStream-free
    // ReadableStream) and stored the capture before message_stop.
    expect((capture.chat_request as { stream?: unknown }).stream).toBe(true);
    expect(capture.stream_status).toBe("complete");
    expectTrainable(capture, "anthropic");
  });

  it("refuses a call without a valid session token, in the provider's shape", async () => {
    const res = await host.fetch("on-r2", "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": "not-a-token", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
  });
});

describe("Worker on workerd: untrusted input (issue 12)", () => {
  it("answers an unknown route from the path and headers alone, never from its body", async () => {
    // A Google-shaped body used to pick the Google error shape: it was read and parsed.
    const res = await host.fetch("on-r2", "/v1/nothing", {
      method: "POST",
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.error).toMatchObject({ type: "not_found_error" });
    expect(body.error.status).toBeUndefined();
  });

  it("refuses 100,000-deep nesting with 400 before inference, and ignores a forged policy version", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const nested = await host.fetch("on-r2", "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("deep")}` },
      body: `{"model":"policy","messages":[{"role":"user","content":"hi"}],"x":${deep}}`,
    });
    expect(nested.status).toBe(400);
    expect((await nested.json()).error.message).toMatch(/more than 128 levels deep/);
    expect(await r2Captures("deep")).toEqual([]);

    const forged = await host.fetch("on-r2", "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("forged")}`, "x-polar-policy-version": "step-999" },
      body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(forged.status).toBe(200);
    const [capture] = await r2Captures("forged");
    expect(capture.policy_version).toBeNull();
  });
});

describe("Worker on workerd with an S3 store", () => {
  it("captures to an S3-compatible server (s3rver) with SigV4 from its secrets", async () => {
    const res = await host.fetch("on-s3", "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("s3-chat")}` },
      body: JSON.stringify({ model: "policy", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const sse = await res.text();
    expect(sse).toContain("data: [DONE]");
    const { ListObjectsV2Command, GetObjectCommand } = await import("@aws-sdk/client-s3");
    const prefix = `runs/w/${keys.capturesOfSession("wt", "s3-chat")}`;
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
    expect(listed.Contents?.length).toBe(1);
    const object = await s3.client.send(
      new GetObjectCommand({ Bucket: s3.bucket, Key: listed.Contents?.[0].Key }),
    );
    const capture = await decodeCapture(
      await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
    expect(capture.stream).toBe(true);
    expectTrainable(capture, "openai_chat");
  });
});

describe("Worker configuration", () => {
  it("answers every request with a 500 naming the bad settings, without crashing", async () => {
    const res = await host.fetch("misconfigured", "/healthz");
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body.error.message).toMatch(/UPSTREAM_URL/);
    const again = await host.fetch("misconfigured", "/v1/chat/completions", { method: "POST", body: "{}" });
    expect(again.status).toBe(500);
  });
});
