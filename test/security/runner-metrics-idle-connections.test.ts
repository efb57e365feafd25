import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerMetrics } from "../../batch-runner/metrics.ts";
import { FIRST_REQUEST_MS } from "../../shared/node/first-request-deadline.ts";
import { openSocket, within } from "../support/raw-sockets.ts";

/*
 * Issue 49, item 5, at the runner's `/metrics` listener (`polar runner --metrics-port`): like the
 * proxy, it closes connections that send nothing, or stall in their headers, within a bounded time,
 * and holds a bounded number at once. Node's defaults held an idle socket until the client left
 * and accepted every connection. Here the deadline and the cap are lowered so the test runs in
 * seconds; the runner serves with the proxy's defaults (20 s, a quarter of the descriptor limit).
 */
const stats = { init: 0, ready: 0, run: 1, postrun: 0, inFlight: 1 };
let server: { url: string; close(): Promise<void> };
let port: number;

beforeAll(async () => {
  server = await new RunnerMetrics(() => stats).serve(0, "127.0.0.1", {
    firstRequestMs: 800,
    maxConnections: 150,
  });
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  await server?.close();
});

const open = () => openSocket(port);

describe("the runner's /metrics listener", () => {
  it("serves with the proxy's first-request deadline by default", () => {
    expect(FIRST_REQUEST_MS).toBeLessThanOrEqual(30_000);
  });

  it("closes connections that never send a byte, and one stalled in its headers, at the deadline", async () => {
    const start = Date.now();
    const idle = await Promise.all(Array.from({ length: 100 }, () => open()));
    const stalled = await open();
    stalled.socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\nx-sl");
    const all = [...idle, stalled];
    // Generous for a loaded machine: without the deadline they stay open for good.
    const closed = await within(15_000, Promise.all(all.map((c) => c.closedAt)));
    const left = all.filter((c) => !c.socket.closed).length;
    for (const c of all) c.socket.destroy();
    expect(closed, `the listener still held ${left} connections 15 s after they opened`).not.toBeNull();
    for (const at of closed ?? []) expect(at - start).toBeGreaterThanOrEqual(700);
    // It still answers a scrape after them.
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("polar_runner_in_flight 1");
  });

  it("holds at most its cap: connections past it are closed on accept", async () => {
    const opened = await Promise.all(Array.from({ length: 200 }, () => open()));
    // Well before the 800 ms deadline: only the cap can have closed them.
    await new Promise((r) => setTimeout(r, 300));
    const open_ = opened.filter((c) => !c.socket.closed).length;
    for (const c of opened) c.socket.destroy();
    expect(open_).toBeLessThanOrEqual(150);
    expect(open_).toBeGreaterThan(0);
  });
});
