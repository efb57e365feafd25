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

/*
 * Hermes Agent (PyPI `hermes-agent`) in one-shot mode (`hermes -z`): it prints only the final
 * response on stdout. The model comes from a named custom provider in HERMES_HOME/config.yaml
 * (written as JSON, which YAML reads) whose key is read from POLAR_API_KEY.
 */

const HERMES_DIR = ".hermes";
const PROVIDER_ID = "polar";
const KEY_VAR = "POLAR_API_KEY";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("hermes", CliSettings, ctx.agent.settings);
}

/** config.yaml: the proxy as the only provider; `agent.settings.config` merges here. */
export function hermesConfig(ctx: PresetContext, settings: CliSettings): Record<string, unknown> {
  const base = {
    // An explicit window skips the context-length lookup on OpenRouter's model list (a network
    // call per start); Hermes refuses any window under 64K, so the default claims 128K.
    model: { provider: `custom:${PROVIDER_ID}`, default: ctx.agent.model, context_length: 131_072 },
    providers: {
      [PROVIDER_ID]: {
        name: PROVIDER_ID,
        base_url: openAiBaseUrl(ctx.proxyUrl),
        key_env: KEY_VAR,
        transport: "chat_completions",
        default_model: ctx.agent.model,
      },
    },
    agent: { api_max_retries: settings.max_retries },
    // Hermes pip-installs an optional backend's packages on first use (its TTS tool asks for
    // edge-tts at every start): from the package index, into the shared harness venv. A session
    // must neither reach the network nor change the cache other sessions run from.
    security: { allow_lazy_installs: false },
  };
  return deepMerge(base, settings.config);
}

export const hermes: HarnessPreset = {
  name: "hermes",
  npmPackage: null,
  version: "0.19.0",
  pipPackages: ["hermes-agent==0.19.0"],
  provider: "openai_chat",

  configFiles(ctx) {
    return { [`${HERMES_DIR}/config.yaml`]: prettyJson(hermesConfig(ctx, settingsOf(ctx))) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      HERMES_HOME: joinPath(ctx.homeDir, HERMES_DIR),
      [KEY_VAR]: ctx.sessionToken,
      PYTHONUNBUFFERED: "1",
      // The same switch as `security.allow_lazy_installs`, as Hermes' sealed images set it.
      HERMES_DISABLE_LAZY_INSTALLS: "1",
    });
    const argv = [
      binPath(binDir, "hermes"),
      "--provider",
      `custom:${PROVIDER_ID}`,
      "-m",
      ctx.agent.model,
      "--yolo",
      ...settings.extra_args,
      "-z",
      ctx.instruction,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    const answer = stdout.trim();
    return { finalAnswer: answer || null, success: exitCode === 0 && answer !== "" };
  },

  // state.db holds the session's messages; logs/ the agent's log.
  artifacts: [`${HERMES_DIR}/state.db`, `${HERMES_DIR}/logs`],
};
