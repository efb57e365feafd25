import { HarborConfig } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import { judgeDirs, rewritePaths } from "../harbor/harbor-paths.ts";
import { HarborRewardError, parseHarborReward } from "../harbor/harbor-reward.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { shellQuote } from "../runtime/shell-quote.ts";
import { judgeInFreshRuntime } from "./agent-outputs.ts";
import type { Evaluation, EvaluationContext, Evaluator } from "./evaluator.ts";
import { commandTimeoutMs, parseEvaluatorConfig, tail } from "./evaluator-config.ts";
import { copyEvaluatorFiles } from "./evaluator-files.ts";
import { rewardFiles } from "./harbor-reward-files.ts";
import { aggregateSteps, sessionSteps, stepConfig } from "./harbor-steps.ts";
import { judgeEnv } from "./judge-env.ts";

/**
 * `harbor`: a Harbor task's tests (docs/tasks.md, "Harbor tasks"). Like test_on_output, the judge is
 * a fresh runtime holding only the agent's `outputs`: the tests go to `$HOME/harbor/tests` and the
 * verifier's dir to `$HOME/harbor/logs/verifier` (outside the work dir, so nothing the agent left
 * there lies on their path), the tests' `/tests`, `/logs` and WORKDIR paths are rewritten to those
 * dirs, and `bash test.sh` runs in the work dir. Its reward.json / reward.txt is the reward (only a
 * name the tests mention: `rewardFiles`); none, or an unreadable one, fails the evaluation (the
 * session is ERROR), as it fails a Harbor trial.
 */
export { HarborConfig };

export const harbor: Evaluator = {
  name: "harbor",
  needsFreshRuntime: true,
  async evaluate(trajectory: Trajectory, ctx: EvaluationContext): Promise<Evaluation> {
    const cfg = parseEvaluatorConfig("harbor", HarborConfig, ctx.config);
    // A multi-step task was judged step by step while it ran (harbor-steps.ts).
    if (cfg.steps) return aggregateSteps(cfg, ctx.steps ?? [], trajectory);
    return judge(cfg, ctx);
  },
  steps(config) {
    return sessionSteps(parseEvaluatorConfig("harbor", HarborConfig, config));
  },
  async evaluateStep(index, ctx) {
    const cfg = parseEvaluatorConfig("harbor", HarborConfig, ctx.config);
    const step = cfg.steps?.[index];
    if (!step) throw new Error(`the task has no step ${index}`);
    return judge(stepConfig(cfg, step), ctx);
  },
};

function judge(cfg: HarborConfig, ctx: EvaluationContext): Promise<Evaluation> {
  return judgeInFreshRuntime(
    ctx,
    cfg.outputs,
    { denied: cfg.outputs_denied, replace: cfg.outputs_replace },
    (reason) => ({ stage: "outputs", reason }),
    (fresh, outputs) => runTests(fresh, cfg, ctx, outputs),
  );
}

async function runTests(
  fresh: Runtime,
  cfg: HarborConfig,
  ctx: EvaluationContext,
  outputs: { copied: string[]; skipped: string[] },
): Promise<Evaluation> {
  const dirs = judgeDirs(fresh.homeDir);
  const map = { "/tests": dirs.tests, "/logs": dirs.logs, [cfg.workdir]: fresh.workDir };
  const mkdir = await fresh.exec([
    "mkdir",
    "-p",
    dirs.tests,
    dirs.verifier,
    `${dirs.logs}/agent`,
    `${dirs.logs}/artifacts`,
  ]);
  if (mkdir.exitCode !== 0) throw new Error(`could not make the verifier dirs: ${mkdir.stderr.trim()}`);
  // Inline tests are text: their container paths are rewritten; a `from` file is copied as it is.
  const tests = Object.fromEntries(
    Object.entries(cfg.tests).map(([path, source]) => [
      `${dirs.tests}/${path}`,
      typeof source === "string"
        ? rewritePaths(source, map)
        : "content" in source
          ? { content: rewritePaths(source.content, map) }
          : source,
    ]),
  );
  await copyEvaluatorFiles(fresh, tests, ctx.hostFiles);
  const res = await fresh.exec(["bash", `${dirs.tests}/test.sh`], {
    env: judgeEnv(rewriteEnv(cfg.env, map)),
    timeoutMs: commandTimeoutMs(cfg.timeout_seconds, ctx.timeoutMs),
  });
  const names = await rewardFiles(cfg.tests, ctx.hostFiles);
  const read = await fresh.exec([
    "sh",
    "-c",
    `for f in ${names.map((n) => shellQuote(`${dirs.verifier}/${n}`)).join(" ")}; do if [ -f "$f" ]; then printf 'yes\\n'; head -c 65536 "$f"; else printf 'no\\n'; fi; printf '\\0'; done`,
  ]);
  const found = read.stdout.split("\0").map((part) => (part.startsWith("yes\n") ? part.slice(4) : null));
  const json = names.includes("reward.json") ? found[names.indexOf("reward.json")] : null;
  const text = names.includes("reward.txt") ? found[names.indexOf("reward.txt")] : null;
  const metadata = {
    workdir: cfg.workdir,
    outputs: outputs.copied,
    ...(outputs.skipped.length ? { outputs_skipped: outputs.skipped.slice(0, 50) } : {}),
    exit_code: res.exitCode,
    timed_out: res.timedOut,
    stdout: tail(res.stdout),
    stderr: tail(res.stderr),
  };
  if (res.timedOut) return { outcome_reward: 0, metadata: { ...metadata, reason: "test.sh timed out" } };
  try {
    const reward = parseHarborReward({ json: json ?? null, text: text ?? null }, cfg.reward_key);
    return {
      outcome_reward: reward.reward,
      metadata: { ...metadata, rewards: reward.rewards, reward_from: reward.from, reward_files_read: names },
    };
  } catch (err) {
    if (!(err instanceof HarborRewardError)) throw err;
    // Harbor fails the trial here; so does Polar (the session is ERROR, the reason in its error).
    throw new Error(
      `${err.message} (test.sh exited ${res.exitCode}: ${tail(res.stderr || res.stdout, 300).trim()})`,
    );
  }
}

function rewriteEnv(env: Record<string, string>, map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, rewritePaths(v, map)]));
}
