/** Runs the dry-run policy app on Node's http server (the CLI and tests start it this way). */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createPolicyApp, type PolicyAppOptions, type PolicyRequestCounts } from "./app.ts";

export interface PolicyServerOptions extends PolicyAppOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
}

export interface PolicyServer {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  counts: PolicyRequestCounts;
  resetCounts(): void;
  setWeightVersion(version: string): void;
  close(): Promise<void>;
}

export async function startPolicyServer(options: PolicyServerOptions = {}): Promise<PolicyServer> {
  const host = options.host ?? "127.0.0.1";
  const policy = createPolicyApp(options);
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: policy.app.fetch, hostname: host, port: options.port ?? 0 }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    counts: policy.counts,
    resetCounts: policy.resetCounts,
    setWeightVersion: policy.setWeightVersion,
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Keep-alive sockets from clients would otherwise hold close() open.
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
