import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createPolicyApp } from "../../batch-runner/dry-run-policy/app.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/** The dry-run policy and the real proxy on 127.0.0.1 (ephemeral ports), sharing one store. */
export interface HarnessStack {
  policyUrl: string;
  proxy: TestProxy;
  store: ObjectStore;
  signingKey: string;
  close(): Promise<void>;
}

export async function startHarnessStack(): Promise<HarnessStack> {
  const policy = createPolicyApp();
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: policy.app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
    s.once("error", reject);
  });
  const policyUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new MemoryStore();
  const signingKey = "harness-e2e-signing-key";
  const proxy = await startProxy({ upstream: policyUrl, store, auth: { signingKey } });
  return {
    policyUrl,
    proxy,
    store,
    signingKey,
    async close() {
      await proxy.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
