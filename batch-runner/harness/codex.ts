import { parseCodexJsonl } from "./json-output.ts";
import { codexMcpServers } from "./mcp-config.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  CliSettings,
  deepMerge,
  joinPath,
  openAiBaseUrl,
  parseSettings,
  withAgentEnv,
} from "./preset-options.ts";
import { toToml } from "./toml.ts";

/*
 * Under /tmp, Codex refuses to create its PATH helper aliases in CODEX_HOME; it warns and runs
 * on (the runs here do), but a sessions dir outside /tmp avoids the warning.
 */
const CODEX_HOME = ".codex";
/** Codex reads the provider's key from the variable named by `env_key`. */
const KEY_VAR = "POLAR_API_KEY";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("codex", CliSettings, ctx.agent.settings);
}

/** config.toml as an object, so `agent.settings.config` can deep-merge over it. */
export function codexConfig(ctx: PresetContext, settings: CliSettings): Record<string, unknown> {
  const base = {
    model: ctx.agent.model,
    model_provider: "polar",
    check_for_update_on_startup: false,
    model_providers: {
      polar: {
        name: "polar",
        base_url: openAiBaseUrl(ctx.proxyUrl),
        // Codex only speaks Responses to custom providers (wire_api = "chat" is rejected).
        wire_api: "responses",
        env_key: KEY_VAR,
        request_max_retries: settings.max_retries,
        stream_max_retries: settings.max_retries,
      },
    },
    analytics: { enabled: false },
    feedback: { enabled: false },
    otel: { exporter: "none" },
    ...(ctx.agent.mcp_servers?.length ? { mcp_servers: codexMcpServers(ctx.agent.mcp_servers) } : {}),
  };
  return deepMerge(base, settings.config);
}

export const codex: HarnessPreset = {
  name: "codex",
  npmPackage: "@openai/codex",
  version: "0.169.0",
  provider: "openai_responses",

  configFiles(ctx) {
    return { [`${CODEX_HOME}/config.toml`]: toToml(codexConfig(ctx, settingsOf(ctx))) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      CODEX_HOME: joinPath(ctx.homeDir, CODEX_HOME),
      [KEY_VAR]: ctx.sessionToken,
    });
    const argv = [
      binPath(binDir, "codex"),
      "exec",
      "--skip-git-repo-check",
      "--dangerously-bypass-approvals-and-sandbox",
      "--json",
      "-m",
      ctx.agent.model,
      // Plugins sync a marketplace over the network at startup.
      "-c",
      "features.plugins=false",
      ...settings.extra_args,
      ctx.instruction,
    ];
    // Empty stdin: with an open one, `codex exec` waits to read more prompt from it.
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseCodexJsonl(stdout, exitCode);
  },

  // Rollout files: every event of the session as Codex recorded it.
  artifacts: [`${CODEX_HOME}/sessions`],
};
