/**
 * Weight versions as the engine itself reports them (vLLM's RL endpoints, `GET /weight_info`):
 * every capture names the version of the engine that sampled it, with no version set on the
 * proxy; a call in flight while the trainer pauses the engine, reloads its weights, sets a new
 * version and resumes still completes, and its capture shows both versions; with two replicas, a
 * version change on one is seen on that replica's calls only. The weight pushes go to an engine of
 * this file's own ("versions"): on the engine other files share, their calls would show as running
 * and could let a push land before this file's call started.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { ENGINE_MODEL, realEngine } from "../support/real-engine.ts";

const engine = await realEngine();
/** This file's own engine: only its calls run there, and only it changes its version. */
// Uncapped (scripts/engine.sh caps calls at 128 new tokens), so a call runs long enough to be
// seen running and pushed across on a loaded machine.
const own = engine.ok ? await realEngine("versions", ["--max-new-tokens", "0"]) : engine;
const KEY = "versions-key";
const TASK = "versions";
let seq = 0;

async function session() {
  const id = `v${++seq}`;
  return { id, token: await mintSessionToken({ sessionId: id, taskId: TASK }, KEY) };
}

async function post(url: string, path: string, body?: unknown): Promise<void> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

async function versionOf(url: string): Promise<string> {
  return ((await (await fetch(`${url}/weight_info`)).json()) as { weight_version: string }).weight_version;
}

/** What a trainer does between two iterations: pause (in-flight calls kept), reload, new version, resume. */
async function pushWeights(url: string, version: string): Promise<void> {
  await post(url, "/pause?mode=keep");
  await post(url, "/collective_rpc", { method: "reload_weights" });
  await post(url, "/update_weight_version", { new_version: version });
  await post(url, "/resume");
}

/** Resolves once the engine reports a running request (so a weight push lands mid-call). */
async function untilRunning(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const running = /^vllm:num_requests_running\{[^}]*\} ([0-9.]+)/m.exec(metrics);
    if (running && Number(running[1]) > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the call never showed as running on the engine");
}

describe.skipIf(!own.ok)(`engine-reported weight versions (${own.ok ? "vLLM" : own.reason})`, () => {
  for (const streamMode of ["live", "synthesize"] as const) {
    describe(`${streamMode} streams`, () => {
      let proxy: TestProxy;
      beforeAll(async () => {
        proxy = await startProxy({ upstream: own.url, auth: { signingKey: KEY }, streamMode });
      });
      afterAll(() => proxy?.close());

      it("a capture names the engine's version, with no version set on the proxy", async () => {
        const s = await session();
        const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
        const now = await versionOf(own.url);
        await client.chat.completions.create({
          model: ENGINE_MODEL,
          max_tokens: 4,
          messages: [{ role: "user", content: "hi" }],
        });
        const [cap] = await readCaptures(proxy.store, TASK, s.id);
        expect(cap).toMatchObject({
          policy_version: now,
          policy_version_end: now,
          policy_version_source: "engine",
        });
      });

      it("a call in flight across a weight push completes and shows both versions", async () => {
        const s = await session();
        const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
        const before = await versionOf(own.url);
        const after = `${before}-${streamMode}-next`;
        const req = {
          model: ENGINE_MODEL,
          max_tokens: 1500,
          temperature: 0,
          messages: [{ role: "user" as const, content: "hi" }],
        };
        const answered =
          streamMode === "live"
            ? client.chat.completions.stream(req).finalChatCompletion()
            : client.chat.completions.create(req);
        await untilRunning(own.url);
        await pushWeights(own.url, after);
        expect((await answered).choices[0].finish_reason).toBe("length");
        const [cap] = await readCaptures(proxy.store, TASK, s.id);
        expect(cap).toMatchObject({
          policy_version: before,
          policy_version_end: after,
          policy_version_source: "engine",
          error: null,
        });
        expect(cap.response_token_ids).toHaveLength(1500);
      }, 240_000);
    });
  }
});

describe.skipIf(!own.ok)("two real replicas: versions are per replica", () => {
  const second = own;
  const store = new MemoryStore();
  let proxy: RunningProxy;
  beforeAll(async () => {
    proxy = await startNodeProxy({
      upstreamUrl: engine.url,
      upstreamUrls: [second.url],
      routing: { policy: "round_robin" },
      store,
      host: "127.0.0.1",
      port: 0,
      signingKey: KEY,
    });
  });
  afterAll(() => proxy?.close());

  it("a version set on one replica shows on its calls only", async () => {
    expect(second.ok).toBe(true);
    await post(second.url, "/update_weight_version", { new_version: "second-replica-v7" });
    // The shared engine's version is never changed by any test file.
    const firstVersion = await versionOf(engine.url);
    const seen = new Map<string, Set<string>>();
    for (let i = 0; i < 4; i++) {
      const s = await session();
      const client = new OpenAI({ apiKey: s.token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      await client.chat.completions.create({
        model: ENGINE_MODEL,
        max_tokens: 2,
        messages: [{ role: "user", content: "hi" }],
      });
      const [cap] = await readCaptures(store, TASK, s.id);
      const versions = seen.get(cap.replica!) ?? new Set();
      versions.add(`${cap.policy_version}/${cap.policy_version_end}`);
      seen.set(cap.replica!, versions);
    }
    expect(seen.get(second.url)).toEqual(new Set(["second-replica-v7/second-replica-v7"]));
    expect(seen.get(engine.url)).toEqual(new Set([`${firstVersion}/${firstVersion}`]));
  });
});
