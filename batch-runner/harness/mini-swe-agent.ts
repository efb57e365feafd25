import type { HarnessOutcome, HarnessPreset, PresetContext } from "./preset.ts";
import { CliSettings, joinPath, openAiBaseUrl, parseSettings, prettyJson } from "./preset-options.ts";
import { driverInvocation, driverResult, driverSource } from "./python-driver.ts";

/*
 * mini-swe-agent (PyPI `mini-swe-agent`), driven through its library by a small script
 * (python/mini_swe_agent_driver.py, why there: see its docstring). It speaks OpenAI Chat
 * Completions through litellm with one `bash` tool, and finishes when a command's output starts
 * with COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; the lines after it are the submission (the answer).
 */

const DIR = ".polar/mini-swe-agent";
const DRIVER = `${DIR}/driver.py`;
const SETTINGS = `${DIR}/settings.json`;
const TRAJECTORY = `${DIR}/trajectory.json`;
const DRIVER_SOURCE = driverSource("mini_swe_agent_driver.py");

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("mini_swe_agent", CliSettings, ctx.agent.settings);
}

/** The driver's settings: model, proxy, where the trajectory goes; `config` merges over mini.yaml. */
export function miniSweAgentSettings(ctx: PresetContext): Record<string, unknown> {
  return {
    model: ctx.agent.model,
    base_url: openAiBaseUrl(ctx.proxyUrl),
    trajectory_path: joinPath(ctx.homeDir, TRAJECTORY),
    config: settingsOf(ctx).config,
  };
}

/**
 * The driver's last stdout line: `{"polar_result": {"exit_status", "submission"}}`. It exits 0 when
 * the agent itself ended the run (its AGENT_ENDS: submitted, or out of steps, time or well-formed
 * actions): the policy's outcome, which the judge scores (an RL run must see a small model's failed
 * sessions as 0s, not drop them as errors); 1 when the harness failed.
 */
export function parseMiniSweAgentOutput(stdout: string, exitCode: number | null): HarnessOutcome {
  const result = driverResult(stdout);
  const answer = typeof result?.submission === "string" ? result.submission.trim() : "";
  return { finalAnswer: answer || null, success: exitCode === 0 && typeof result?.exit_status === "string" };
}

export const miniSweAgent: HarnessPreset = {
  name: "mini_swe_agent",
  npmPackage: null,
  version: "2.4.6",
  // litellm 1.106 imports `mcp` on every call that offers tools but does not depend on it.
  pipPackages: ["mini-swe-agent==2.4.6", "litellm==1.106.2", "mcp==2.3.0"],
  provider: "openai_chat",

  configFiles(ctx) {
    return { [DRIVER]: DRIVER_SOURCE, [SETTINGS]: prettyJson(miniSweAgentSettings(ctx)) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    return driverInvocation(ctx, binDir, { driver: DRIVER, settings: SETTINGS }, settings.extra_args, {
      MSWEA_GLOBAL_CONFIG_DIR: joinPath(ctx.homeDir, ".config/mini-swe-agent"),
      MSWEA_CONFIGURED: "true",
      MSWEA_SILENT_STARTUP: "1",
      MSWEA_COST_TRACKING: "ignore_errors",
      MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT: String(settings.max_retries + 1),
    });
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseMiniSweAgentOutput(stdout, exitCode);
  },

  artifacts: [TRAJECTORY],
};
