import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { Lookup } from "../../proxy-worker/routing/connect-guard.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

/*
 * A replica's address was checked once, when registered: a name whose DNS answered a public
 * address at the check and 127.0.0.1 at the connection (DNS rebinding) reached a service on the
 * proxy's host. Here the check's resolver and the connections' lookup are the attacker's DNS: the
 * first answers 203.0.113.7 (public), the second 127.0.0.1. Now every connection's address is
 * classed again (proxy-worker/routing/connect-guard.ts) and nothing reaches the service.
 */
const CONTROL = "rebinding-control";
let policy: PolicyServer;
let secret: Server;
let secretPort: number;
let secretHits = 0;
const logs: string[] = [];
let proxy: RunningProxy;

/** The attacker's DNS at connection time, and the operator's own engine under a name. */
const lookup = ((host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
  if (host === "rebind.test" || host === "engine.test") {
    const address: LookupAddress = { address: "127.0.0.1", family: 4 };
    return options?.all ? callback(null, [address]) : callback(null, address.address, address.family);
  }
  return (dnsLookup as (h: string, o: object, c: (...args: unknown[]) => void) => void)(
    host,
    options,
    callback,
  );
}) as unknown as Lookup;

beforeAll(async () => {
  policy = await startPolicy();
  secret = createServer((_req, res) => {
    secretHits++;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((r) => secret.listen(0, "127.0.0.1", () => r()));
  secretPort = (secret.address() as AddressInfo).port;
  // As `polar proxy` starts it (no address kind allowed), its engine named by the operator.
  proxy = await startNodeProxy({
    upstreamUrl: `http://engine.test:${new URL(policy.url).port}`,
    store: new MemoryStore(),
    port: 0,
    signingKey: "rebinding-key",
    log: (l) => logs.push(l),
    lookup,
    control: {
      jobs: new MemoryQueue(),
      controlToken: CONTROL,
      replicaAddresses: { allow: [], resolve: async () => ["203.0.113.7"] },
    },
  });
});

afterAll(async () => {
  await proxy?.close();
  await policy?.close();
  secret?.closeAllConnections();
  await new Promise((r) => secret?.close(r));
});

describe("a replica name rebound after its check", () => {
  it("is not reached: the probe's connection is refused, the registration fails, the service sees nothing", async () => {
    const url = `http://rebind.test:${secretPort}`;
    const res = await fetch(`${proxy.url}/v1/replicas`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
      body: JSON.stringify({ url }),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("not reachable");
    expect(secretHits, "a connection reached the service the name was rebound to").toBe(0);
    expect(logs.join("\n")).toMatch(/rebind\.test now resolves to a loopback address/);
  });

  it("still reaches the operator's own --upstream by its name, wherever it resolves", async () => {
    const res = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${await mintSessionToken({ sessionId: "s", taskId: "t" }, "rebinding-key")}`,
      },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  });
});
