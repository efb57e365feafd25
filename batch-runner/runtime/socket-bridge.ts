import { rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The TCP port the in-sandbox half listens on; each sandbox has its own network namespace. */
export const BRIDGE_PORT = 18787;

/** The in-sandbox half (plain JS, run with the sandbox's node). */
export const SANDBOX_BRIDGE_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "sandbox-bridge.mjs");

/** Directory holding the node binary that runs the in-sandbox half. */
export const HOST_NODE_DIR = dirname(dirname(process.execPath));

export interface HostBridge {
  socketPath: string;
  close(): Promise<void>;
}

/**
 * The host half of the proxy bridge: a Unix socket (bind-mounted into the sandbox) whose connections
 * are forwarded to the proxy's TCP address. Only the proxy is reachable this way.
 */
export async function startHostBridge(runDir: string, proxyUrl: string): Promise<HostBridge> {
  const target = new URL(proxyUrl);
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const socketPath = join(runDir, "proxy.sock");
  await rm(socketPath, { force: true });
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    socketPath,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketPath, { force: true });
    },
  };
}

/** The URL the agent inside the sandbox uses for the proxy (keeps any path prefix of the host URL). */
export function sandboxProxyUrl(proxyUrl: string): string {
  const u = new URL(proxyUrl);
  return `http://127.0.0.1:${BRIDGE_PORT}${u.pathname.replace(/\/+$/, "")}`;
}

/** Prefix for argv so the command runs behind the in-sandbox half of the bridge. */
export function bridgedArgv(nodeBin: string, socketPath: string, argv: string[]): string[] {
  return [nodeBin, SANDBOX_BRIDGE_SCRIPT, socketPath, String(BRIDGE_PORT), "--", ...argv];
}
