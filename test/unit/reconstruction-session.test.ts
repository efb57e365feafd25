import { describe, expect, it } from "vitest";
import { reconstructSession } from "../../batch-runner/reconstruction/build-session.ts";
import { loadCaptures, sessionsWithCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";

const TASK = "task-1";
const SESSION = "sess-1";
const task = { task_id: TASK, builder: { strategy: "prefix_merging" as const, config: {} } };

async function store(...captures: CaptureRecord[]): Promise<MemoryStore> {
  const s = new MemoryStore();
  for (const c of captures)
    await s.put(keys.capture(c.task_id, c.session_id, c.capture_id), await encodeCapture(c));
  return s;
}

describe("reconstructSession", () => {
  const old1 = capture([1], [2, IM_END]);
  const old2 = capture([1, 2, IM_END, 3], [4, IM_END]);
  const new1 = capture([1], [5, IM_END], { attempt: 1 });
  const new2 = capture([1, 5, IM_END, 3], [6], { attempt: 1, logprobs: [-0.5] });

  it("uses the latest attempt by default and the one asked for otherwise", async () => {
    const s = await store(old1, new1, old2, new2);
    const latest = await reconstructSession({ store: s, task, sessionId: SESSION });
    expect(latest.attempt).toBe(1);
    expect(latest.trajectory.traces.map((t) => t.capture_ids)).toEqual([[new1.capture_id, new2.capture_id]]);
    expect(latest.trajectory.traces[0].response_logprobs?.at(-1)).toBe(-0.5);
    const first = await reconstructSession({
      store: s,
      task,
      sessionId: SESSION,
      attempt: 0,
      status: "TIMEOUT",
    });
    expect(first.trajectory).toMatchObject({ status: "TIMEOUT", builder: "prefix_merging", error: null });
    expect(first.trajectory.traces[0].response_ids).toEqual([2, IM_END, 3, 4, IM_END]);
  });

  it("keeps unreadable objects out, reports them, and counts them as excluded", async () => {
    const s = await store(old1, old2);
    const bad = keys.capture(TASK, SESSION, "01J0000000000");
    await s.put(bad, "not gzip");
    const stray = capture([9], [9], { session_id: "other" });
    await s.put(keys.capture(TASK, SESSION, stray.capture_id), await encodeCapture(stray));
    const out = await reconstructSession({ store: s, task, sessionId: SESSION });
    expect(out.unreadable.map((u) => u.key)).toEqual([bad, keys.capture(TASK, SESSION, stray.capture_id)]);
    expect(out.trajectory.reconstruction_stats).toMatchObject({ captures: 4, excluded_failed: 2, chains: 1 });
  });

  it("gives an empty trajectory for a session without captures", async () => {
    const out = await reconstructSession({ store: new MemoryStore(), task, sessionId: SESSION });
    expect(out.trajectory.traces).toEqual([]);
    expect(out.trajectory.reconstruction_stats.captures).toBe(0);
  });

  it("uses per_request when the task asks for it", async () => {
    const s = await store(old1, old2);
    const perRequest = { task_id: TASK, builder: { strategy: "per_request" as const, config: {} } };
    const out = await reconstructSession({ store: s, task: perRequest, sessionId: SESSION });
    expect(out.trajectory.builder).toBe("per_request");
    expect(out.trajectory.traces).toHaveLength(2);
  });

  it("lists the sessions of a task", async () => {
    const s = await store(old1, capture([1], [2], { session_id: "sess-0" }));
    expect(await sessionsWithCaptures(s, TASK)).toEqual(["sess-0", SESSION]);
    expect((await loadCaptures(s, TASK, "nobody")).captures).toEqual([]);
  });
});

describe("loadCaptures", () => {
  it("lets a store error through instead of silently dropping the capture", async () => {
    const s = await store(capture([1], [2]));
    const failing = Object.assign(Object.create(s), {
      get: async () => {
        throw new Error("S3 503 SlowDown");
      },
    });
    await expect(loadCaptures(failing, TASK, SESSION)).rejects.toThrow("SlowDown");
  });
});
