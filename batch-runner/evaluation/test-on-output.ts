import { TestOnOutputConfig } from "../../shared/schemas/task-settings.ts";
import type { Trajectory } from "../../shared/schemas/trajectory.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { MAX_OUTPUT_CHARS } from "../runtime/spawn-group.ts";
import { judgeInFreshRuntime, packageInitsAbove } from "./agent-outputs.ts";
import type { Evaluation, EvaluationContext, Evaluator } from "./evaluator.ts";
import { commandTimeoutMs, parseEvaluatorConfig, tail } from "./evaluator-config.ts";
import { copyEvaluatorFiles } from "./evaluator-files.ts";
import { judgeEnv } from "./judge-env.ts";
import { toolStepRewards } from "./tool-step-rewards.ts";

/**
 * `test_on_output`: after the harness, the agent's declared `outputs` and then the evaluator's files
 * are copied into a fresh runtime (same image and prepare steps, an empty HOME), and `command` runs
 * there (sh -c, in its work dir, with the interpreters isolated: judge-env.ts). Nothing the agent
 * left in its HOME, its tools or beside the outputs can change how the check behaves, and the
 * outputs bring no runner config and replace nothing the prepare steps built (agent-outputs.ts). Reward from
 * the exit code, or from stdout: every expected line present (`expected_lines`), or stdout parsed
 * as JSON equal to `expected_json`. `trust_agent_runtime` runs the command in the agent's runtime.
 */
export { TestOnOutputConfig };

export const testOnOutput: Evaluator = {
  name: "test_on_output",
  needsFreshRuntime: true,
  async evaluate(trajectory: Trajectory, ctx: EvaluationContext): Promise<Evaluation> {
    const cfg = parseEvaluatorConfig("test_on_output", TestOnOutputConfig, ctx.config);
    const outcome = await outcomeOf(cfg, ctx);
    if (cfg.step_rewards === "none") return outcome;
    const { loadQwen3 } = await import("../../shared/node/qwen3/qwen3.ts");
    return { ...outcome, step_rewards: toolStepRewards(trajectory, loadQwen3()) };
  },
};

async function outcomeOf(cfg: TestOnOutputConfig, ctx: EvaluationContext): Promise<Evaluation> {
  if (cfg.trust_agent_runtime) return judge(ctx.runtime, cfg, ctx, { runtime: "agent" });
  return judgeInFreshRuntime(
    ctx,
    cfg.outputs,
    {
      denied: [...cfg.outputs_denied, ...packageInitsAbove(Object.keys(cfg.files))],
      replace: cfg.outputs_replace,
    },
    (reason) => ({ command: cfg.command, mode: "outputs", reason }),
    (fresh, outputs) =>
      judge(fresh, cfg, ctx, {
        runtime: "fresh",
        outputs: outputs.copied,
        ...(outputs.skipped.length ? { outputs_skipped: outputs.skipped.slice(0, 50) } : {}),
      }),
  );
}

async function judge(
  runtime: Runtime,
  cfg: TestOnOutputConfig,
  ctx: EvaluationContext,
  where: Record<string, unknown>,
): Promise<Evaluation> {
  const copied = await copyEvaluatorFiles(runtime, cfg.files, ctx.hostFiles);
  const res = await runtime.exec(["sh", "-c", cfg.command], {
    env: judgeEnv(cfg.env),
    timeoutMs: commandTimeoutMs(cfg.timeout_seconds, ctx.timeoutMs),
  });
  const base = {
    command: cfg.command,
    ...where,
    files: copied,
    exit_code: res.exitCode,
    timed_out: res.timedOut,
    stdout: tail(res.stdout),
    stderr: tail(res.stderr),
  };
  if (res.timedOut)
    return { outcome_reward: 0, metadata: { ...base, mode: "timeout", reason: "the command timed out" } };
  if (res.stdout.length >= MAX_OUTPUT_CHARS)
    return {
      outcome_reward: 0,
      metadata: {
        ...base,
        mode: "output_cap",
        reason: `stdout reached the ${MAX_OUTPUT_CHARS}-character cap`,
      },
    };
  if (cfg.expected_lines) return scoreLines(cfg, res.stdout, base);
  if (cfg.expected_json !== undefined) return scoreJson(cfg.expected_json, res.stdout, base);
  const ok = res.exitCode === cfg.expected_exit_code;
  return {
    outcome_reward: ok ? 1 : 0,
    metadata: {
      ...base,
      mode: "exit_code",
      ...(ok ? {} : { reason: `exit code ${res.exitCode}, expected ${cfg.expected_exit_code}` }),
    },
  };
}
function scoreLines(cfg: TestOnOutputConfig, stdout: string, base: Record<string, unknown>): Evaluation {
  const expected = cfg.expected_lines ?? [];
  const seen = new Set(stdout.split(/\r?\n/).map((l) => l.trim()));
  const missing = expected.filter((l) => !seen.has(l.trim()));
  const found = expected.length - missing.length;
  const reward = cfg.partial_credit
    ? expected.length
      ? found / expected.length
      : 1
    : missing.length === 0
      ? 1
      : 0;
  return { outcome_reward: reward, metadata: { ...base, mode: "lines", missing_lines: missing } };
}

function scoreJson(expected: unknown, stdout: string, base: Record<string, unknown>): Evaluation {
  const text = stdout.trim();
  // Whole stdout first; else the last non-empty line (commands often log before printing a result).
  const candidates = [
    text,
    text
      .split(/\r?\n/)
      .filter((l) => l.trim() !== "")
      .pop() ?? "",
  ];
  for (const candidate of candidates) {
    let actual: unknown;
    try {
      actual = JSON.parse(candidate);
    } catch {
      continue;
    }
    const ok = canonical(actual) === canonical(expected);
    return {
      outcome_reward: ok ? 1 : 0,
      metadata: {
        ...base,
        mode: "json",
        ...(ok ? {} : { reason: "the JSON output differs from expected_json", actual }),
      },
    };
  }
  return { outcome_reward: 0, metadata: { ...base, mode: "json", reason: "stdout is not JSON" } };
}

/** JSON text with object keys sorted, so key order never decides equality. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
