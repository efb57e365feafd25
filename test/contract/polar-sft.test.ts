/** `polar sft` as a user runs it, on the example tasks, with the dry-run policy. */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import { startS3rver } from "../support/s3rver.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(root, "bin/polar.js");
const tasksFile = join(root, "examples/sft-tasks.jsonl");

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI without blocking this process (a spawnSync would freeze the in-process S3 server). */
function runPolar(args: string[], env: NodeJS.ProcessEnv = process.env, cwd?: string): Promise<CliRun> {
  const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d;
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d;
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

type SftRecord = Record<string, unknown> & { polar: { session_id: string; trace_index: number } };
const readJsonl = async (path: string): Promise<SftRecord[]> =>
  (await readFile(path, "utf8"))
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as SftRecord);

let dir: string;
let run: CliRun;
let results: SessionResult[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-sft-cli-"));
  run = await runPolar(
    ["sft", tasksFile, "--accept", "reward >= 1", "--out", join(dir, "out")],
    process.env,
    dir,
  );
  const resultsDir = join(dir, "out/rollouts/store/results");
  results = [];
  for (const task of await readdir(resultsDir)) {
    for (const f of await readdir(join(resultsDir, task))) {
      results.push(SessionResult.parse(JSON.parse(await readFile(join(resultsDir, task, f), "utf8"))));
    }
  }
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("polar sft", () => {
  it("runs every session and reports the acceptance rate overall and by task", () => {
    expect(run.code, run.stderr).toBe(0);
    const accepted = results.filter((r) => (r.reward ?? 0) >= 1);
    // The examples hold a task whose script writes the wrong text: some sessions must be rejected.
    expect(accepted.length).toBeGreaterThan(0);
    expect(accepted.length).toBeLessThan(results.length);
    const pct = ((accepted.length / results.length) * 100).toFixed(1);
    expect(run.stdout).toContain(`accepted ${accepted.length} / ${results.length} sessions (${pct}%)`);
    expect(run.stdout).toMatch(/wrong-greeting: 0\/2/);
    expect(run.stdout).toMatch(/fix-add: 1\/1/);
    expect(run.stderr).toMatch(/\[#+\] 6\/6 sessions, accepted/);
  });

  it("writes chat and token records only for accepted sessions, one per trainable trace", async () => {
    const acceptedIds = new Set(results.filter((r) => (r.reward ?? 0) >= 1).map((r) => r.session_id));
    const chat = await readJsonl(join(dir, "out/chat.jsonl"));
    const tokens = await readJsonl(join(dir, "out/tokens.jsonl"));
    const expectedTraces = results
      .filter((r) => acceptedIds.has(r.session_id))
      .flatMap((r) => r.trajectory.traces.filter((t) => t.loss_mask.includes(1)).map(() => r.session_id));
    expect(tokens.map((t) => t.polar.session_id).sort()).toEqual([...expectedTraces].sort());
    expect(chat.map((t) => t.polar.session_id).sort()).toEqual([...expectedTraces].sort());
    for (const rec of tokens) {
      const r = results.find((x) => x.session_id === rec.polar.session_id) as SessionResult;
      const trace = r.trajectory.traces[rec.polar.trace_index];
      expect(rec.prompt_ids).toEqual(trace.prompt_ids);
      expect(rec.loss_mask).toEqual(trace.loss_mask);
    }
    // The mini agent speaks OpenAI Chat: its last request's messages plus the final assistant answer.
    for (const rec of chat) {
      const messages = rec.messages as { role: string }[];
      expect(messages[0].role).toBe("user");
      expect(messages.at(-1)?.role).toBe("assistant");
      expect((rec.tools as { function: { name: string } }[])[0].function.name).toBe("bash");
    }
    const stats = JSON.parse(await readFile(join(dir, "out/stats.json"), "utf8"));
    expect(stats.accepted).toBe(acceptedIds.size);
    expect(stats.attempted).toBe(results.length);
  });

  it("resumes from its work dir without rerunning, and writes to an S3 --out", async () => {
    const s3 = await startS3rver();
    try {
      const res = await runPolar(
        [
          "sft",
          tasksFile,
          "--accept",
          "reward >= 1",
          "--out",
          `s3://${s3.bucket}/sft`,
          "--work",
          join(dir, "out/rollouts"),
        ],
        { ...process.env, ...s3.env },
      );
      expect(res.code, res.stderr).toBe(0);
      const body = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: "sft/chat.jsonl" }));
      expect(await body.Body?.transformToString()).toBe(await readFile(join(dir, "out/chat.jsonl"), "utf8"));
      // Same sessions, same verdicts: nothing was rerun.
      const stats = (out: string) => out.split("\n").filter((l) => !l.startsWith("wrote "));
      expect(stats(res.stdout)).toEqual(stats(run.stdout));
      expect(res.stdout).toMatch(/wrote \d+ chat and \d+ token records to s3:\/\//);
    } finally {
      await s3.stop();
    }
  });

  it("rejects a bad --accept expression with exit code 2 before running anything", async () => {
    const res = await runPolar(["sft", tasksFile, "--accept", "rewrad >= 1", "--out", join(dir, "x")]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('unknown name "rewrad"');
  });
});
