import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

/*
 * Issue 49, item 8: under load, OpenAI SDK clients saw "Connection error" against the proxy. httpx
 * (the Python SDK's transport) reuses a pooled connection idle for up to 5 s; Node closed an idle
 * connection after 5 s (+1 s). A client that reuses one at 4.9 s of its own idle time, when the
 * proxy's event loop is late (a loaded machine; here a busy wait in this process, which the proxy
 * shares), has its request arrive on a socket the proxy's keep-alive timer then closes unread:
 * ECONNRESET (seen here with Node's default: "error ECONNRESET"). The proxy's keep-alive now
 * outlasts every common client's (65 s).
 */
let policy: PolicyServer;
let proxy: RunningProxy;

beforeAll(async () => {
  policy = await startPolicy();
  proxy = await startNodeProxy({
    upstreamUrl: policy.url,
    store: new MemoryStore(),
    signingKey: "keep-alive-key",
    port: 0,
    log: () => {},
  });
});

afterAll(async () => {
  await proxy?.close();
  await policy?.close();
});

/** Sends one GET on `socket`; resolves with its status line, or with what ended the connection. */
function ask(socket: Socket, lag = 0): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (c: Buffer) => {
      text += c;
      const head = text.indexOf("\r\n\r\n");
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? Number.NaN);
      if (head >= 0 && text.length >= head + 4 + length) done(text.split("\r\n")[0] as string);
    };
    const onError = (err: NodeJS.ErrnoException) => done(`error ${err.code}`);
    const onClose = () => done("closed without an answer");
    const done = (what: string) => {
      socket.off("data", onData).off("error", onError).off("close", onClose);
      resolve(what);
    };
    socket.on("data", onData).on("error", onError).on("close", onClose);
    // Sent from the check phase, then the loop is held: the next turn runs its timers (the
    // proxy's keep-alive timer among them) before it reads the request now in its receive buffer.
    setImmediate(() => {
      socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
      const until = Date.now() + lag;
      while (Date.now() < until) {}
    });
  });
}

describe("keep-alive reuse at a client's pool expiry", () => {
  it("a connection reused 4.9 s after its answer, while the proxy lags 1.5 s, is answered", async () => {
    const socket = connect(proxy.port, "127.0.0.1");
    socket.on("error", () => {});
    await new Promise((r) => socket.once("connect", r));
    try {
      expect(await ask(socket)).toBe("HTTP/1.1 200 OK");
      await new Promise((r) => setTimeout(r, 4_900));
      expect(await ask(socket, 1_500)).toBe("HTTP/1.1 200 OK");
    } finally {
      socket.destroy();
    }
  }, 20_000);
});
