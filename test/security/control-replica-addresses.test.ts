import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { ReplicaAddressKind } from "../../proxy-worker/routing/replica-address.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

/*
 * Issue 49, item 7: a control-token holder made the proxy probe loopback and link-local addresses
 * through `/v1/replicas` and read the answers back (a service's status, a refused port): a map of
 * the proxy's host and network. Now such an address needs the operator's allowance, refused before
 * anything is sent there, and a failed probe is answered "not reachable" only.
 */
const CONTROL = "replica-address-control";
let policy: PolicyServer;
/** A service on the proxy's host that no trainer's engine is: it counts what reaches it. */
let secret: Server;
let secretUrl: string;
let secretHits = 0;
const logs: string[] = [];

async function proxyAllowing(allow: ReplicaAddressKind[]): Promise<RunningProxy> {
  return startNodeProxy({
    upstreamUrl: policy.url,
    store: new MemoryStore(),
    port: 0,
    signingKey: "replica-address-key",
    log: (l) => logs.push(l),
    control: { jobs: new MemoryQueue(), controlToken: CONTROL, replicaAddresses: { allow } },
  });
}

let strict: RunningProxy;
let local: RunningProxy;

beforeAll(async () => {
  policy = await startPolicy();
  secret = createServer((_req, res) => {
    secretHits++;
    res.writeHead(503, { "content-type": "text/plain" }).end("internal-admin-banner v1.2");
  });
  await new Promise<void>((r) => secret.listen(0, "127.0.0.1", () => r()));
  secretUrl = `http://127.0.0.1:${(secret.address() as AddressInfo).port}`;
  // As `polar proxy` (no flag) and `polar serve` (loopback allowed) start it.
  [strict, local] = await Promise.all([proxyAllowing([]), proxyAllowing(["loopback"])]);
});

afterAll(async () => {
  await Promise.all([strict?.close(), local?.close()]);
  await policy?.close();
  secret?.closeAllConnections();
  await new Promise((r) => secret?.close(r));
});

async function control(proxy: RunningProxy, method: string, body: unknown) {
  const res = await fetch(`${proxy.url}/v1/replicas`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    message: ((await res.json()) as { error?: { message: string } }).error?.message,
  };
}

describe("replica addresses the control API may add", () => {
  it("refuses loopback, link-local and metadata addresses the operator did not allow, sending them nothing", async () => {
    const port = new URL(secretUrl).port;
    const cases: [string, string][] = [
      [secretUrl, "loopback"],
      [`http://localhost:${port}`, "loopback"],
      [`http://[::1]:${port}`, "loopback"],
      [`http://2130706433:${port}`, "loopback"],
      ["http://169.254.169.254", "metadata"],
      ["http://[fe80::1]:8000", "link-local"],
    ];
    for (const [url, kind] of cases) {
      const res = await control(strict, "POST", { url });
      expect(res.status, url).toBe(403);
      expect(res.message).toContain(`${kind} address`);
      expect(res.message).not.toContain("503");
    }
    const replace = await control(strict, "PUT", { urls: [policy.url, secretUrl] });
    expect(replace.status).toBe(403);
    expect(secretHits, "the proxy sent a request to an address it was not allowed").toBe(0);
    const list = await fetch(`${strict.url}/v1/replicas`, {
      headers: { authorization: `Bearer ${CONTROL}` },
    });
    expect(((await list.json()) as { replicas: { url: string }[] }).replicas.map((r) => r.url)).toEqual([
      policy.url,
    ]);
  });

  it("answers a failed probe with 'not reachable' only: its status and body go to the proxy's log", async () => {
    const res = await control(local, "POST", { url: secretUrl });
    expect(res.status).toBe(422);
    expect(res.message).toBe(
      `replica ${secretUrl} is not reachable: start the engine first (or fix the URL); nothing was changed`,
    );
    expect(secretHits).toBe(1);
    expect(logs.some((l) => l.includes(secretUrl) && l.includes("503"))).toBe(true);
  });

  it("adds a loopback engine where the operator allowed loopback (polar serve's default)", async () => {
    const engine = await startPolicy();
    try {
      expect((await control(local, "POST", { url: engine.url })).status).toBe(201);
    } finally {
      await engine.close();
    }
  });
});
