import { buildTrajectory } from "../../batch-runner/reconstruction/build-session.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult, TrajectoryStatus } from "../../shared/schemas/trajectory.ts";

/** A SessionResult around the traces the prefix-merging builder makes from `captures`. */
export function sessionResult(
  taskId: string,
  sessionId: string,
  sampleIndex: number,
  captures: CaptureRecord[],
  opts: { reward?: number | null; status?: TrajectoryStatus } = {},
): SessionResult {
  const status = opts.status ?? "COMPLETED";
  const trajectory = buildTrajectory(captures, { strategy: "prefix_merging", config: {} }, status);
  return {
    v: 1,
    task_id: taskId,
    session_id: sessionId,
    sample_index: sampleIndex,
    attempt: 0,
    status,
    reward: opts.reward ?? null,
    timings: {
      queued_at: null,
      init_ms: null,
      ready_wait_ms: null,
      run_ms: null,
      postrun_ms: 1,
      finished_at: new Date().toISOString(),
    },
    agent: null,
    evaluation: null,
    trajectory,
    error: null,
  };
}
