import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationContext } from "../../batch-runner/evaluation/evaluator.ts";
import { testOnOutput } from "../../batch-runner/evaluation/test-on-output.ts";
import { bwrapProblem, bwrapRuntimeFactory } from "../../batch-runner/runtime/bwrap.ts";
import { diskVolumeSupport } from "../../batch-runner/runtime/disk-volume.ts";
import type { Runtime, RuntimeSpecInput } from "../../batch-runner/runtime/runtime.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";

/*
 * Issue 41, item 2: a 250 MiB sparse file (no blocks on the agent's 64 MiB volume) took 230-250 MiB
 * of the host's temp dir while test_on_output staged the outputs for its judge, and the dense copy
 * could not fit the judge's own 64 MiB volume. Outputs now go straight onto the judge's volume with
 * their holes kept: the host's temp dir gets nothing, the judge sees the same 250 MiB file using no
 * more blocks than the agent's, and the session is judged.
 */
const problem = bwrapProblem() ?? (diskVolumeSupport() === true ? null : `disk: ${diskVolumeSupport()}`);
if (problem) console.warn(`judge-outputs-sparse: skipped: ${problem}`);

/** Allocated bytes under `dir` (du counts blocks, not apparent sizes). */
function allocated(dir: string): number {
  return Number(execFileSync("du", ["-s", "-B1", dir], { encoding: "utf8" }).split("\t")[0]);
}

describe.skipIf(problem !== null)("outputs staged for the judge (disk_mb 64)", () => {
  let root: string;
  let watched: string;
  const started: Runtime[] = [];
  const spec = (id: string): RuntimeSpecInput => ({
    sessionId: id,
    env: {},
    limits: { disk_mb: 64 },
    proxyUrl: "http://127.0.0.1:9",
  });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-sparse-"));
    watched = join(root, "host-tmp");
    await mkdir(watched);
  });
  afterAll(async () => {
    for (const r of started) await r.stop().catch(() => {});
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("copies a 250 MiB sparse file sparse onto the judge's volume, nothing on the host's temp dir", async () => {
    const factory = bwrapRuntimeFactory({ sessionsRoot: join(root, "sessions") });
    const agent = await factory.create(spec("sparse-agent"));
    started.push(agent);
    const wrote = await agent.exec([
      "sh",
      "-c",
      "truncate -s 250M big.bin && echo 5 > answer.txt && du -k big.bin",
    ]);
    expect(wrote.exitCode, wrote.stderr).toBe(0);
    expect(Number(wrote.stdout.split("\t")[0])).toBeLessThan(1024);

    const ctx: EvaluationContext = {
      runtime: agent,
      workDir: agent.workDir,
      agent: { exitCode: 0, timedOut: false, finalAnswer: null },
      timeoutMs: 30_000,
      config: {
        command: 'test "$(cat answer.txt)" = 5 && stat -c "%s %b %B" big.bin',
        outputs: ["."],
      },
      freshRuntime: async () => {
        const judge = await factory.create(spec(`sparse-judge-${started.length}`));
        started.push(judge);
        return judge;
      },
    };
    // The host's temp dir is watched while the judge's outputs are staged.
    const before = process.env.TMPDIR;
    process.env.TMPDIR = watched;
    let peak = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, allocated(watched));
    }, 10);
    let result: Awaited<ReturnType<typeof testOnOutput.evaluate>> | Error;
    try {
      result = await testOnOutput
        .evaluate({ status: "COMPLETED", traces: [] } as unknown as Trajectory, ctx)
        .catch((err: Error) => err);
    } finally {
      clearInterval(timer);
      peak = Math.max(peak, allocated(watched));
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
    console.log(`judge-outputs-sparse: peak host temp ${peak} bytes`);
    expect(peak).toBeLessThan(1024 * 1024);
    expect(result).not.toBeInstanceOf(Error);
    const evaluation = result as Exclude<typeof result, Error>;
    expect(evaluation.outcome_reward, JSON.stringify(evaluation.metadata)).toBe(1);
    const [size, blocks, blockSize] = String(evaluation.metadata.stdout).trim().split(" ").map(Number);
    expect(size).toBe(250 * 1024 * 1024);
    expect(blocks * blockSize).toBeLessThan(1024 * 1024);
  }, 120_000);
});
