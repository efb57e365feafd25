import { parseClaudeStreamJson } from "./json-output.ts";
import { claudeMcpConfig } from "./mcp-config.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  CliSettings,
  deepMerge,
  joinPath,
  parseSettings,
  prettyJson,
  withAgentEnv,
} from "./preset-options.ts";

/** Claude Code config lives in its own dir per session, so runs never share state. */
const CONFIG_DIR = ".claude";
/** `agent.mcp_servers`, passed with `--mcp-config` (only when the task has servers). */
const MCP_CONFIG = `${CONFIG_DIR}/polar-mcp.json`;

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("claude_code", CliSettings, ctx.agent.settings);
}

export const claudeCode: HarnessPreset = {
  name: "claude_code",
  npmPackage: "@anthropic-ai/claude-code",
  version: "2.1.330",
  provider: "anthropic",

  configFiles(ctx) {
    const settings = settingsOf(ctx);
    const base = { includeCoAuthoredBy: false, cleanupPeriodDays: 1 };
    return {
      [`${CONFIG_DIR}/settings.json`]: prettyJson(deepMerge(base, settings.config)),
      // Marks first-run onboarding done so no interactive screen can appear.
      [`${CONFIG_DIR}/.claude.json`]: prettyJson({ hasCompletedOnboarding: true }),
      ...(ctx.agent.mcp_servers?.length
        ? { [MCP_CONFIG]: prettyJson(claudeMcpConfig(ctx.agent.mcp_servers)) }
        : {}),
    };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const model = ctx.agent.model;
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      CLAUDE_CONFIG_DIR: joinPath(ctx.homeDir, CONFIG_DIR),
      ANTHROPIC_BASE_URL: ctx.proxyUrl,
      ANTHROPIC_API_KEY: ctx.sessionToken,
      // Every model slot points at the policy: sub-agents and the small/fast model included.
      ANTHROPIC_MODEL: model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      CLAUDE_CODE_SUBAGENT_MODEL: model,
      CLAUDE_CODE_MAX_RETRIES: String(settings.max_retries),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_BUG_COMMAND: "1",
      // --dangerously-skip-permissions refuses to run as root unless told it is sandboxed.
      IS_SANDBOX: "1",
    });
    const argv = [
      binPath(binDir, "claude"),
      "-p",
      ctx.instruction,
      "--output-format",
      "stream-json",
      "--verbose",
      "--dangerously-skip-permissions",
      "--model",
      model,
      // Only the task's servers: none from a .mcp.json the work dir may hold.
      ...(ctx.agent.mcp_servers?.length
        ? ["--mcp-config", joinPath(ctx.homeDir, MCP_CONFIG), "--strict-mcp-config"]
        : []),
      ...settings.extra_args,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseClaudeStreamJson(stdout, exitCode);
  },

  // Session transcripts (JSONL per conversation) are the harness's own view of the run.
  artifacts: [`${CONFIG_DIR}/projects`],
};
