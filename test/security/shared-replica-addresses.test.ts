import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { ReplicaAddressKind } from "../../proxy-worker/routing/replica-address.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { oneSessionCall } from "../support/proxy.ts";

/*
 * Issue 51's known gap: the replica set a trainer stores is applied by every proxy on the store,
 * but only the proxy it was registered through checked it against its `--allow-replica-addresses`.
 * A proxy whose operator allowed loopback (`polar serve`, or `--allow-replica-addresses loopback`)
 * took `http://127.0.0.1:PORT`; another proxy on the same store, allowing none, then sent model
 * calls to ITS OWN host's port. Now the proxy that routes checks the stored set against its own
 * allowlist first: a replica it does not allow is left out, and with none left the call is refused.
 */
const KEY = "shared-addresses-signing-key";
const CONTROL = "shared-addresses-control";

/** The operator's own `--upstream` of both proxies (never checked). */
let upstream: PolicyServer;
/** A service on 127.0.0.1 registered through the proxy that allows loopback. */
let local: PolicyServer;
let dir: string;
let store: DirectoryStore;
let allowing: RunningProxy;
let strict: RunningProxy;
const strictLog: string[] = [];

const start = (allow: ReplicaAddressKind[], log: (l: string) => void) =>
  startNodeProxy({
    upstreamUrl: upstream.url,
    store: new DirectoryStore(dir),
    port: 0,
    signingKey: KEY,
    log,
    control: { jobs: new MemoryQueue(), controlToken: CONTROL, replicaAddresses: { allow } },
  });

beforeAll(async () => {
  [upstream, local] = await Promise.all([startPolicy(), startPolicy()]);
  dir = mkdtempSync(join(tmpdir(), "polar-shared-addresses-"));
  store = new DirectoryStore(dir);
  // As `polar proxy --allow-replica-addresses loopback` and `polar proxy` (none) start them.
  [allowing, strict] = await Promise.all([
    start(["loopback"], () => {}),
    start([], (l) => strictLog.push(l)),
  ]);
});
afterAll(async () => {
  await Promise.all([allowing?.close(), strict?.close()]);
  await Promise.all([upstream, local].map((p) => p?.close().catch(() => undefined)));
  rmSync(dir, { recursive: true, force: true });
});

async function control(proxy: RunningProxy, method: string, body: unknown) {
  const res = await fetch(`${proxy.url}/v1/replicas`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function oneCall(proxy: RunningProxy) {
  const { status, text, capture } = await oneSessionCall(proxy.url, store, KEY, "addr");
  return { status, text, replica: capture?.replica ?? null };
}

const storedUrls = async () =>
  (JSON.parse(new TextDecoder().decode((await store.get(keys.runtimeReplicas()))!)) as { urls: string[] })
    .urls;

describe("a stored replica set, checked against the allowlist of the proxy that routes", () => {
  it("sends nothing to a loopback replica another proxy's operator allowed", async () => {
    expect((await control(allowing, "PUT", { urls: [local.url] })).status).toBe(200);
    expect((await oneCall(allowing)).replica).toBe(local.url);
    local.resetCounts();
    upstream.resetCounts();
    const refused = await oneCall(strict);
    expect(refused.status).toBe(503);
    expect(refused.text).toContain("no replica this proxy may call");
    expect(local.counts.chat_completions, "the strict proxy called its own loopback").toBe(0);
    // Nor the old set: routing by it is the off-policy data the stored set exists to prevent.
    expect(upstream.counts.chat_completions).toBe(0);
    expect(strictLog.some((l) => l.includes(local.url) && l.includes("loopback address"))).toBe(true);
  });

  it("routes a mixed set to the replicas it allows, and keeps the others in the stored set", async () => {
    // The operator's own upstream is never checked; the registered loopback one is left out here.
    expect((await control(allowing, "PUT", { urls: [local.url, upstream.url] })).status).toBe(200);
    local.resetCounts();
    for (let i = 0; i < 4; i++) expect((await oneCall(strict)).replica).toBe(upstream.url);
    expect(local.counts.chat_completions).toBe(0);
    expect(
      ((await control(strict, "GET", undefined)).body.replicas as { url: string }[]).map((r) => r.url),
    ).toEqual([upstream.url]);
    // A change through the strict proxy builds on the stored set, not on what it routes to.
    expect((await control(strict, "POST", { url: local.url })).status).toBe(200);
    expect(await storedUrls()).toEqual([local.url, upstream.url]);
    expect((await control(strict, "DELETE", { url: upstream.url })).status).toBe(200);
    expect(await storedUrls()).toEqual([local.url]);
    // And the strict proxy still refuses to add such an address itself.
    expect(
      (await control(strict, "POST", { url: `http://localhost:${new URL(local.url).port}` })).status,
    ).toBe(403);
  });
});
