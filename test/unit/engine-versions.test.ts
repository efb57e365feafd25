/**
 * The engine's version read around each call: a route the engine lacks is remembered for a minute,
 * but a read that timed out on a busy engine is not (the TRL lane on a loaded machine lost the
 * versions of two whole steps that way).
 */
import { describe, expect, it } from "vitest";
import { EngineVersions } from "../../proxy-worker/engines/weight-version.ts";
import type { SendInit, Upstream } from "../../proxy-worker/upstream.ts";

function engine(
  answers: Array<"slow" | "down" | 404 | string>,
  delayMs = 0,
): { up: Upstream; reads: () => number } {
  let n = 0;
  const up: Upstream = {
    baseUrl: "http://127.0.0.1:9",
    fetch: () => Promise.reject(new Error("send is used")),
    send: async (_url: string, init: SendInit) => {
      const a = answers[Math.min(n, answers.length - 1)];
      n += 1;
      if (a === "slow") {
        // Answers only after the read's deadline.
        await new Promise((_, reject) =>
          init.signal.addEventListener("abort", () =>
            reject(Object.assign(new Error("t"), { name: "TimeoutError" })),
          ),
        );
      }
      if (delayMs) {
        // Answers after delayMs, unless the read gave up first.
        await new Promise((resolve, reject) => {
          const timer = setTimeout(resolve, delayMs);
          init.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(Object.assign(new Error("t"), { name: "TimeoutError" }));
          });
        });
      }
      if (a === "down") throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      if (a === 404) return { status: 404, text: "Not Found" };
      return { status: 200, text: JSON.stringify({ weight_version: a }) };
    },
  };
  return { up, reads: () => n };
}

describe("EngineVersions", () => {
  it("asks again on the next call after a read that timed out or failed", async () => {
    const { up, reads } = engine(["slow", "down", "7"]);
    const versions = new EngineVersions(true, Date.now, 1_000);
    // The read waits its timeout (1 s here) before giving up.
    expect(await versions.read(up)).toEqual({
      ok: false,
      why: "the upstream did not answer /weight_info within 1000 ms",
    });
    expect(await versions.read(up)).toMatchObject({ ok: false });
    expect(await versions.read(up)).toEqual({ ok: true, version: "7" });
    expect(reads()).toBe(3);
  }, 10_000);

  it("waits for a busy engine that answers after 6 s (vLLM on loaded CPU cores)", async () => {
    const { up } = engine(["4"], 6_000);
    expect(await new EngineVersions(true).read(up)).toEqual({ ok: true, version: "4" });
  }, 20_000);

  it("waits 2 s, not 15, when the trainer named the version too (a miss then costs only the label)", async () => {
    const { up } = engine(["slow"]);
    const started = Date.now();
    const read = await new EngineVersions(true, Date.now, undefined, () => true).read(up);
    expect(read).toEqual({ ok: false, why: "the upstream did not answer /weight_info within 2000 ms" });
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 10_000);

  it("remembers an engine without the route for a minute", async () => {
    let now = 0;
    const { up, reads } = engine([404, "3"]);
    const versions = new EngineVersions(true, () => now);
    expect(await versions.read(up)).toEqual({ ok: true, version: null });
    expect(await versions.read(up)).toEqual({ ok: true, version: null });
    expect(reads()).toBe(1);
    now = 61_000;
    expect(await versions.read(up)).toEqual({ ok: true, version: "3" });
  });

  it("names no span, and says why, when a read around the call failed (never the start's as a guess)", async () => {
    const versions = new EngineVersions(true, Date.now, 200);
    const before = engine(["slow"]);
    expect(await versions.end(before.up, await versions.read(before.up))).toEqual({
      span: null,
      failure: "before the call: the upstream did not answer /weight_info within 200 ms",
    });
    const after = engine(["5", "down"]);
    const outcome = await versions.end(after.up, await versions.read(after.up));
    expect(outcome.span).toBeNull();
    expect(outcome.failure).toMatch(/^after the call: /);
    const fine = engine(["5", "6"]);
    expect(await versions.end(fine.up, await versions.read(fine.up))).toEqual({
      span: { start: "5", end: "6" },
      failure: null,
    });
  });
});
