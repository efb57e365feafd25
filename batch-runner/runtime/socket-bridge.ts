import { closeSync, openSync } from "node:fs";
import { rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The TCP port the in-sandbox half listens on; each sandbox has its own network namespace. */
export const BRIDGE_PORT = 18787;
/** The bridge's port in a judge that joins the agent's side services: one loopback, two listeners. */
export const JUDGE_BRIDGE_PORT = BRIDGE_PORT + 1;

/** The in-sandbox half (plain JS, run with the sandbox's node). */
export const SANDBOX_BRIDGE_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "sandbox-bridge.mjs");

/** Directory holding the node binary that runs the in-sandbox half. */
export const HOST_NODE_DIR = dirname(dirname(process.execPath));

/**
 * What one session may hold through its bridge. Every bridged connection costs the runner two
 * descriptors and the proxy one, all in the process its neighbours share: without a cap, one
 * session's 9,000 idle connections took the process to its descriptor limit (issue 41).
 */
export interface BridgeLimits {
  /** Connections open at once; past it a new one is closed at once (the harness retries). */
  maxConnections: number;
  /** A connection that has sent nothing this long is closed: a connect-and-hold flood. */
  firstByteMs: number;
  /** A connection with no bytes either way this long is closed (a call waiting on a paused engine still fits). */
  idleMs: number;
}

/**
 * 4 x the runner's default `max_in_flight` (16): parallel sub-agents and a client's keep-alive pool
 * fit; a flood does not.
 */
export const BRIDGE_LIMITS: BridgeLimits = { maxConnections: 64, firstByteMs: 30_000, idleMs: 600_000 };

export interface HostBridge {
  socketPath: string;
  /** Connections closed at once because the session held `maxConnections` already. */
  readonly refused: number;
  close(): Promise<void>;
}

/** sun_path holds 108 bytes, its terminating NUL included. */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * An address for the Unix socket at `path` that fits sun_path wherever the sessions dir is: the path
 * itself, or when it is longer, the same file through an open descriptor of its directory
 * (`/proc/self/fd/N/name`). The descriptor is held until `release`, after the server is closed:
 * Node unlinks the bound address on close, and a reused number would name another directory.
 * sandbox-bridge.mjs does the same inside the sandbox (it cannot import this file).
 */
export function socketAddress(path: string): { address: string; release(): void } {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return { address: path, release() {} };
  const fd = openSync(dirname(path), "r");
  let open = true;
  return {
    address: `/proc/self/fd/${fd}/${basename(path)}`,
    release() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/**
 * The host half of the proxy bridge: a Unix socket (bind-mounted into the sandbox) whose connections
 * are forwarded to the proxy's TCP address. Only the proxy is reachable this way, and only within
 * `limits`: a session flooding its bridge runs out of its own connections, not the process's.
 */
export async function startHostBridge(
  runDir: string,
  proxyUrl: string,
  limits: BridgeLimits = BRIDGE_LIMITS,
): Promise<HostBridge> {
  const target = new URL(proxyUrl);
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const socketPath = join(runDir, "proxy.sock");
  await rm(socketPath, { force: true });
  const sockets = new Set<Socket>();
  let refused = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    sockets.add(client);
    sockets.add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    // Activity on the client socket counts both ways: its reads, and the answer written to it.
    client.setTimeout(limits.firstByteMs, close);
    client.once("data", () => client.setTimeout(limits.idleMs));
    client.pipe(upstream).pipe(client);
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  // Node closes a connection past the cap right after accepting it, before any of the above runs.
  server.maxConnections = limits.maxConnections;
  server.on("drop", () => refused++);
  const { address, release } = socketAddress(socketPath);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(address, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    release();
    throw new Error(`the session's proxy bridge cannot listen on ${socketPath}: ${(err as Error).message}`);
  }
  // An error on the listening socket after this point would otherwise be uncaught in the runner.
  server.on("error", () => {});
  return {
    socketPath,
    get refused() {
      return refused;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      release();
      await rm(socketPath, { force: true });
    },
  };
}

/** The URL the agent inside the sandbox uses for the proxy (keeps any path prefix of the host URL). */
export function sandboxProxyUrl(proxyUrl: string, port: number = BRIDGE_PORT): string {
  const u = new URL(proxyUrl);
  return `http://127.0.0.1:${port}${u.pathname.replace(/\/+$/, "")}`;
}

/** Prefix for argv so the command runs behind the in-sandbox half of the bridge. */
export function bridgedArgv(
  nodeBin: string,
  socketPath: string,
  argv: string[],
  port: number = BRIDGE_PORT,
): string[] {
  return [nodeBin, SANDBOX_BRIDGE_SCRIPT, socketPath, String(port), "--", ...argv];
}
