import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BRIDGE_LIMITS,
  MAX_SOCKET_PATH_BYTES,
  socketAddress,
  startHostBridge,
} from "../../batch-runner/runtime/socket-bridge.ts";

/*
 * Issue 41, items 3 and 18, at the host half of the proxy bridge: a session's connections are capped
 * and time out when idle (a flood costs the session, not the process its neighbours share), and
 * the socket binds wherever the sessions dir is, however long its path.
 */
let root: string;
let proxy: Server;
let proxyUrl: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-bridge-"));
  proxy = createServer((req, res) => res.end(`proxy-ok ${req.url}`));
  proxy.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((r) => proxy.close(r));
  await rm(root, { recursive: true, force: true });
});

/** A connection to the bridge; resolves once the bridge accepted it (or refused it: closed at once). */
function open(path: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const address = socketAddress(path);
    const socket = connect(address.address);
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    socket.on("error", () => {});
    socket.once("connect", () => {
      address.release();
      resolve({ socket, closed });
    });
    socket.once("error", (err) => {
      address.release();
      reject(err);
    });
  });
}

/** One HTTP/1.1 request on a held connection, answered by the proxy through the bridge. */
function ask(socket: Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (c: Buffer) => {
      text += c;
      if (text.includes("proxy-ok")) {
        socket.off("data", onData);
        resolve(text.slice(text.indexOf("proxy-ok")));
      }
    };
    socket.on("data", onData);
    socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`);
  });
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the host half of the proxy bridge", () => {
  it("holds at most maxConnections of a session open: a flood past it is closed at once, the held ones still work", async () => {
    const runDir = join(root, "cap");
    await mkdir(runDir);
    const limits = { ...BRIDGE_LIMITS, maxConnections: 8 };
    const bridge = await startHostBridge(runDir, proxyUrl, limits);
    try {
      const conns = await Promise.all(Array.from({ length: 100 }, () => open(bridge.socketPath)));
      await settle(300);
      let stillOpen = 0;
      for (const c of conns) if (!c.socket.destroyed && c.socket.readyState === "open") stillOpen++;
      expect(stillOpen).toBe(8);
      expect(bridge.refused).toBe(92);
      const held = conns.find((c) => c.socket.readyState === "open");
      expect(await ask(held?.socket as Socket, "/v1/models")).toBe("proxy-ok /v1/models");
      // Once the session lets go of its connections, new ones are accepted again.
      for (const c of conns) c.socket.destroy();
      await settle(100);
      const again = await open(bridge.socketPath);
      expect(await ask(again.socket, "/again")).toBe("proxy-ok /again");
      again.socket.destroy();
    } finally {
      await bridge.close();
    }
  });

  it("the runner's default cap: 64 a session", () => {
    expect(BRIDGE_LIMITS.maxConnections).toBe(64);
    expect(BRIDGE_LIMITS.firstByteMs).toBeLessThanOrEqual(60_000);
  });

  it("closes a connection that sends nothing, and one idle after its answer; a busy one stays", async () => {
    const runDir = join(root, "idle");
    await mkdir(runDir);
    const bridge = await startHostBridge(runDir, proxyUrl, {
      maxConnections: 8,
      firstByteMs: 300,
      idleMs: 1200,
    });
    try {
      const silent = await open(bridge.socketPath);
      const used = await open(bridge.socketPath);
      expect(await ask(used.socket, "/first")).toBe("proxy-ok /first");
      const started = Date.now();
      await silent.closed;
      const silentMs = Date.now() - started;
      expect(silentMs).toBeLessThan(1000);
      // The used one outlived the first-byte timeout; asked again before its idle timeout, it answers.
      await settle(600);
      expect(used.socket.destroyed).toBe(false);
      expect(await ask(used.socket, "/second")).toBe("proxy-ok /second");
      const quiet = Date.now();
      await used.closed;
      const idleMs = Date.now() - quiet;
      expect(idleMs).toBeGreaterThanOrEqual(1000);
      expect(idleMs).toBeLessThan(3000);
    } finally {
      await bridge.close();
    }
  });

  it("binds and serves a socket whose path passes sun_path's 108 bytes, and releases it at close", async () => {
    const runDir = join(root, "d".repeat(120), "s".repeat(60), "run");
    await mkdir(runDir, { recursive: true });
    const fds = () => readdirSync("/proc/self/fd").length;
    const before = fds();
    const bridge = await startHostBridge(runDir, proxyUrl);
    expect(Buffer.byteLength(bridge.socketPath)).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    expect(bridge.socketPath).toBe(join(runDir, "proxy.sock"));
    expect(existsSync(bridge.socketPath)).toBe(true);
    const c = await open(bridge.socketPath);
    expect(await ask(c.socket, "/long")).toBe("proxy-ok /long");
    c.socket.destroy();
    await bridge.close();
    expect(existsSync(bridge.socketPath)).toBe(false);
    await settle(50);
    expect(fds()).toBe(before);
  });

  it("a short path is used as it is", () => {
    const a = socketAddress("/tmp/x/run/proxy.sock");
    expect(a.address).toBe("/tmp/x/run/proxy.sock");
    a.release();
  });
});
