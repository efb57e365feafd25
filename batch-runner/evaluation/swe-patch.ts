import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SwePatchConfig } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { shellQuote } from "../runtime/shell-quote.ts";
import { MAX_OUTPUT_CHARS } from "../runtime/spawn-group.ts";
import type { Evaluation, EvaluationContext, Evaluator } from "./evaluator.ts";
import { commandTimeoutMs, parseEvaluatorConfig, tail } from "./evaluator-config.ts";
import { copyEvaluatorFiles } from "./evaluator-files.ts";
import { applyPatch, diffWorkDir } from "./git-patch.ts";
import { judgeEnv } from "./judge-env.ts";
import { parseJunitReport } from "./junit-report.ts";
import { parseTestResults, type TestStatus } from "./test-results.ts";

/**
 * `swe_patch`, the SWE-bench flow: the agent's `git diff` (minus `exclude_paths` and the `test_files`
 * globs) is applied in a fresh runtime prepared from the same image and prepare steps, the
 * evaluator's files (hidden tests) are copied in, `test_command` runs with the interpreters isolated
 * (judge-env.ts), and the reward is 1 only if its exit code is allowed and every `fail_to_pass` test
 * now passes and every `pass_to_pass` test still does. Judging in a fresh runtime means nothing the
 * agent left outside its diff (HOME, build outputs, edited tests) can sway the result; dropping test
 * files means the patch cannot add a test that reports the hidden test's name. Results come from one
 * stream: the `report` file when set (outside the repo), else stdout, never stderr mixed in.
 */
export { SwePatchConfig };

export const swePatch: Evaluator = {
  name: "swe_patch",
  needsFreshRuntime: true,
  async evaluate(_trajectory: Trajectory, ctx: EvaluationContext): Promise<Evaluation> {
    const cfg = parseEvaluatorConfig("swe_patch", SwePatchConfig, ctx.config);
    if (cfg.result_pattern !== undefined) checkPattern(cfg.result_pattern);
    const timeoutMs = commandTimeoutMs(cfg.timeout_seconds, ctx.timeoutMs);

    const diff = await diffWorkDir(ctx.runtime, {
      repoDir: cfg.repo_dir,
      baseRef: cfg.base_ref,
      exclude: cfg.exclude_paths,
      dropGlobs: cfg.test_files,
      timeoutMs,
    });
    const patchMeta = {
      patch: tail(diff.patch, 20_000),
      patch_bytes: diff.patch.length,
      ...(diff.dropped.length ? { dropped_test_files: diff.dropped.slice(0, 100) } : {}),
    };
    if (!diff.ok)
      return fail(`could not take the agent's diff: ${diff.error}`, { ...patchMeta, stage: "diff" });
    if (diff.patch.trim() === "")
      return fail("the agent changed nothing (empty patch)", { ...patchMeta, stage: "diff" });

    const fresh = await ctx.freshRuntime();
    try {
      const applied = await applyPatch(fresh, diff.patch, { repoDir: cfg.repo_dir, timeoutMs });
      if (!applied.ok)
        return fail(applied.error ?? "git apply failed", {
          ...patchMeta,
          stage: "apply",
          apply_error: applied.error,
        });
      const files = await copyEvaluatorFiles(fresh, cfg.files, ctx.hostFiles);
      const tests = await runTests(fresh, cfg, timeoutMs);
      const judged = judge(cfg, tests);
      return {
        outcome_reward: judged.resolved ? 1 : 0,
        metadata: {
          ...patchMeta,
          stage: "tests",
          resolved: judged.resolved,
          ...(judged.resolved ? {} : { reason: judged.reason }),
          fail_to_pass: judged.failToPass,
          pass_to_pass: judged.passToPass,
          files,
          test_exit_codes: tests.exitCodes,
          results_from: tests.source,
          test_log: tail(tests.log, 8000),
        },
      };
    } finally {
      await fresh.stop().catch(() => {});
    }
  },
};

function fail(reason: string, metadata: Record<string, unknown>): Evaluation {
  return { outcome_reward: 0, metadata: { ...metadata, resolved: false, reason } };
}

function checkPattern(pattern: string): void {
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch (err) {
    throw new Error(
      `evaluator.config (swe_patch): result_pattern is not a valid regex: ${(err as Error).message}`,
    );
  }
  if (!/\(\?<test>/.test(re.source) || !/\(\?<status>/.test(re.source)) {
    throw new Error(
      "evaluator.config (swe_patch): result_pattern needs named groups (?<status>...) and (?<test>...)",
    );
  }
}

interface TestRun {
  results: Map<string, TestStatus>;
  log: string;
  exitCodes: Record<string, number | null>;
  source: "report" | "stdout" | "exit_codes";
  /** Why none of the results count (exit code not allowed, timeout, output cut, no report). */
  refused: string | null;
}

/** Where the report goes inside the judge's runtime: its HOME, which the patch (in repo_dir) never reaches. */
const REPORT_DIR = ".polar-judge";
const MAX_REPORT_BYTES = 16 * 1024 * 1024;

async function runTests(runtime: Runtime, cfg: SwePatchConfig, timeoutMs: number): Promise<TestRun> {
  const opts = { cwd: cfg.repo_dir, env: judgeEnv(cfg.env), timeoutMs };
  if (!cfg.test_command.includes("{{test}}")) {
    const reportPath = join(
      runtime.homeDir,
      REPORT_DIR,
      `${randomUUID()}.${cfg.report === "junit" ? "xml" : "tap"}`,
    );
    await mkdir(dirname(reportPath), { recursive: true });
    const command = cfg.test_command.replaceAll("{{report}}", shellQuote(reportPath));
    const res = await runtime.exec(["sh", "-c", command], opts);
    const log = `${tail(res.stdout, 6000)}\n--- stderr ---\n${tail(res.stderr, 2000)}`;
    const exitCodes = { "*": res.exitCode };
    let results: Map<string, TestStatus>;
    let refused: string | null = null;
    if (cfg.report) {
      const report = await readReport(reportPath);
      results =
        report === null
          ? new Map()
          : cfg.report === "junit"
            ? parseJunitReport(report)
            : parseTestResults(report, cfg.result_pattern, cfg.pass_statuses);
      if (report === null) refused = `the test command wrote no readable ${cfg.report} report to {{report}}`;
    } else {
      results = parseTestResults(res.stdout, cfg.result_pattern, cfg.pass_statuses);
      if (res.stdout.length >= MAX_OUTPUT_CHARS)
        refused = `stdout reached the ${MAX_OUTPUT_CHARS}-character cap`;
    }
    if (res.timedOut) refused = "the test command timed out";
    else if (!cfg.ok_exit_codes.includes(res.exitCode ?? Number.NaN))
      refused = `the test command exited ${res.exitCode ?? res.signal} (allowed: ${cfg.ok_exit_codes.join(", ")})`;
    return { results, log, exitCodes, source: cfg.report ? "report" : "stdout", refused };
  }
  const results = new Map<string, TestStatus>();
  const exitCodes: Record<string, number | null> = {};
  let log = "";
  for (const test of new Set([...cfg.fail_to_pass, ...cfg.pass_to_pass])) {
    const res = await runtime.exec(
      ["sh", "-c", cfg.test_command.replaceAll("{{test}}", shellQuote(test))],
      opts,
    );
    results.set(test, res.exitCode === 0 && !res.timedOut ? "PASS" : "FAIL");
    exitCodes[test] = res.exitCode;
    log += `=== ${test} (exit ${res.exitCode})\n${tail(res.stdout, 2000)}\n${tail(res.stderr, 2000)}\n`;
  }
  return { results, log, exitCodes, source: "exit_codes", refused: null };
}

/** The report's text, or null when it is missing, not a regular file or over the cap. */
async function readReport(path: string): Promise<string | null> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    () => null,
  );
  if (!handle) return null;
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > MAX_REPORT_BYTES) return null;
    const buf = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(buf, 0, info.size, 0);
    return buf.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

type Outcome = TestStatus | "MISSING";

function judge(cfg: SwePatchConfig, run: TestRun) {
  const look = (names: string[]) =>
    Object.fromEntries(names.map((n): [string, Outcome] => [n, run.results.get(n) ?? "MISSING"]));
  const failToPass = look(cfg.fail_to_pass);
  const passToPass = look(cfg.pass_to_pass);
  const badF2P = Object.entries(failToPass).filter(([, s]) => s !== "PASS");
  const badP2P = Object.entries(passToPass).filter(([, s]) => s !== "PASS");
  const reasons: string[] = [];
  if (run.refused) reasons.push(run.refused);
  if (badF2P.length)
    reasons.push(`fail_to_pass not passing: ${badF2P.map(([n, s]) => `${n} (${s})`).join(", ")}`);
  if (badP2P.length) reasons.push(`pass_to_pass broken: ${badP2P.map(([n, s]) => `${n} (${s})`).join(", ")}`);
  return { resolved: reasons.length === 0, reason: reasons.join("; "), failToPass, passToPass };
}
