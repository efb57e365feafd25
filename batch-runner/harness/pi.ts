import { parsePiJsonl } from "./json-output.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  CliSettings,
  deepMerge,
  joinPath,
  openAiBaseUrl,
  parseSettings,
  prettyJson,
  withAgentEnv,
} from "./preset-options.ts";

const AGENT_DIR = ".pi/agent";
const PROVIDER_ID = "polar";
/** models.json names a variable and Pi reads the key from it, keeping the token out of files. */
const KEY_VAR = "POLAR_API_KEY";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("pi", CliSettings, ctx.agent.settings);
}

/** models.json: one Chat Completions provider at the proxy serving the task's model. */
export function piModels(ctx: PresetContext): Record<string, unknown> {
  return {
    providers: {
      [PROVIDER_ID]: {
        baseUrl: openAiBaseUrl(ctx.proxyUrl),
        api: "openai-completions",
        apiKey: KEY_VAR,
        // vLLM/SGLang chat templates know system, not developer; neither takes reasoning_effort.
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: ctx.agent.model, name: ctx.agent.model, reasoning: false }],
      },
    },
  };
}

/** settings.json: retries bounded, install telemetry off. `agent.settings.config` merges here. */
export function piSettings(settings: CliSettings): Record<string, unknown> {
  const base = {
    enableInstallTelemetry: false,
    quietStartup: true,
    retry: {
      enabled: settings.max_retries > 0,
      maxRetries: settings.max_retries,
      baseDelayMs: 500,
      provider: { maxRetries: 0 },
    },
  };
  return deepMerge(base, settings.config);
}

export const pi: HarnessPreset = {
  name: "pi",
  npmPackage: "@mariozechner/pi-coding-agent",
  version: "0.73.1",
  provider: "openai_chat",

  configFiles(ctx) {
    const settings = settingsOf(ctx);
    return {
      [`${AGENT_DIR}/models.json`]: prettyJson(piModels(ctx)),
      [`${AGENT_DIR}/settings.json`]: prettyJson(piSettings(settings)),
    };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      PI_CODING_AGENT_DIR: joinPath(ctx.homeDir, AGENT_DIR),
      [KEY_VAR]: ctx.sessionToken,
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
    });
    const argv = [
      binPath(binDir, "pi"),
      "-p",
      "--mode",
      "json",
      "--no-session",
      "--provider",
      PROVIDER_ID,
      "--model",
      ctx.agent.model,
      ...settings.extra_args,
      ctx.instruction,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parsePiJsonl(stdout, exitCode);
  },

  // --no-session keeps nothing on disk; the JSON event stream on stdout is the record.
  artifacts: [],
};
