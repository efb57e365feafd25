import { describe, expect, it } from "vitest";
import { runStatus } from "../../batch-runner/pipeline/session-postrun.ts";
import type { RanSession } from "../../batch-runner/pipeline/session-types.ts";
import type { ExecResult } from "../../batch-runner/runtime/runtime.ts";

const exec = (over: Partial<ExecResult>): ExecResult => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  stdout: "",
  stderr: "",
  durationMs: 1,
  ...over,
});

// runStatus reads only these fields of a session.
const session = (e: ExecResult | null, cancelled = false) =>
  ({
    exec: e,
    cancelled,
    task: { task_id: "t", timeout_seconds: 5 },
    preset: { name: "pi" },
    limits: { memory_mb: 512, pids: 64 },
  }) as unknown as RanSession;

const ok = { finalAnswer: "Done.", success: true };
const failed = { finalAnswer: null, success: false };

describe("runStatus: how a harness run ends", () => {
  it("is COMPLETED only for exit 0 with an output that reports success", () => {
    expect(runStatus(session(exec({})), ok)).toEqual({ status: "COMPLETED", error: null });
  });

  it("is ERROR for exit 0 when the harness's own output reports failure (Pi does this)", () => {
    const r = runStatus(session(exec({})), failed);
    expect(r.status).toBe("ERROR");
    expect(r.error).toMatch(/exited 0 but its output reports failure \(pi\)/);
  });

  it("is TIMEOUT past the budget, ERROR for a crash, a cancel, or no run", () => {
    expect(runStatus(session(exec({ timedOut: true, exitCode: null })), failed).status).toBe("TIMEOUT");
    expect(runStatus(session(exec({ exitCode: 3, stderr: "boom" })), ok)).toEqual({
      status: "ERROR",
      error: "the harness exited with code 3: boom",
    });
    expect(runStatus(session(exec({}), true), ok).status).toBe("ERROR");
    expect(runStatus(session(null), failed).error).toBe("the harness did not run");
  });

  it("is ERROR naming the limit when the session hit one, a timeout or a clean exit after it included", () => {
    expect(runStatus(session(exec({ limit: "memory", exitCode: null, signal: "SIGKILL" })), failed)).toEqual({
      status: "ERROR",
      error: "limit:memory: the session ran out of memory (memory_mb 512): the kernel killed a process",
    });
    expect(runStatus(session(exec({ limit: "pids", timedOut: true })), failed).error).toMatch(
      /^limit:pids: /,
    );
    expect(runStatus(session(exec({ limit: "disk" })), ok).error).toMatch(/^limit:disk: /);
    expect(runStatus(session(exec({ limit: "output" })), ok).status).toBe("ERROR");
  });
});
