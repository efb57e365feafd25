import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNodeProxy } from "../../proxy-worker/node.ts";
import { defaultConnectionCap, openFilesLimit } from "../../shared/node/connection-cap.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

/*
 * Issue 41, item 3, at the proxy: its clients cannot take every descriptor of the process. In
 * `polar run` the runner, its session bridges and the proxy share one process and its 20,000
 * descriptors; 9,000 idle connections took them all. Past its cap the Node proxy closes a new
 * connection on accept; those it holds still get answers, and it accepts again once they go.
 */
let policy: PolicyServer;

beforeAll(async () => {
  policy = await startPolicy();
});

afterAll(async () => {
  await policy.close();
});

function openIdle(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

describe("the Node proxy's connection cap", () => {
  it("holds at most maxConnections: a flood of idle connections past it is closed at once, and logged", async () => {
    const lines: string[] = [];
    const proxy = await startNodeProxy({
      upstreamUrl: policy.url,
      store: new MemoryStore(),
      auth: "off",
      host: "127.0.0.1",
      port: 0,
      maxConnections: 20,
      log: (l) => lines.push(l),
    });
    try {
      const flood = await Promise.all(Array.from({ length: 200 }, () => openIdle(proxy.port)));
      await new Promise((r) => setTimeout(r, 300));
      const open = flood.filter((s) => !s.destroyed && s.readyState === "open");
      expect(open).toHaveLength(20);
      expect(lines.some((l) => /connection cap 20 reached/.test(l))).toBe(true);
      // A held connection still gets its answer.
      const held = open[0] as Socket;
      const answer = await new Promise<string>((resolve) => {
        let text = "";
        held.on("data", (c) => {
          text += c;
          if (text.includes("\r\n\r\n")) resolve(text);
        });
        held.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      for (const s of flood) s.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`${proxy.url}/healthz`);
      expect(res.status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it("defaults to a quarter of the process's descriptor limit", () => {
    const limit = openFilesLimit();
    if (limit === null) expect(defaultConnectionCap()).toBe(16_384);
    else expect(defaultConnectionCap()).toBe(Math.max(64, Math.floor(limit / 4)));
  });
});
