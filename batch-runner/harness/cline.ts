import { parseClineJson } from "./json-output.ts";
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
 * Cline's CLI (npm `cline`, a compiled Bun binary) in its one-shot JSON mode. Its state lives in
 * CLINE_DIR (`<HOME>/.cline`): the provider in data/settings/providers.json (as `cline auth -p
 * openai-compatible -b URL` writes it; a `-k` on the run itself drops the stored base URL and calls
 * the vendor's host; the key is read from OPENAI_API_KEY, so the token stays out of files),
 * telemetry and auto-update in data/settings/global-settings.json.
 * `max_retries` is not passed: its `--retries` counts the agent's consecutive mistakes, not failed
 * model calls, and no switch for the latter was found.
 */

const CLINE_DIR = ".cline";
const SETTINGS_DIR = `${CLINE_DIR}/data/settings`;
const PROVIDER_ID = "openai-compatible";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("cline", CliSettings, ctx.agent.settings);
}

/** providers.json: the proxy as the one provider; its key comes from OPENAI_API_KEY (`apiKeyEnv`). */
function providersFile(ctx: PresetContext): Record<string, unknown> {
  return {
    version: 1,
    lastUsedProvider: PROVIDER_ID,
    modes: {},
    providers: {
      [PROVIDER_ID]: {
        settings: {
          provider: PROVIDER_ID,
          model: ctx.agent.model,
          baseUrl: openAiBaseUrl(ctx.proxyUrl),
        },
        updatedAt: "2026-01-01T00:00:00.000Z",
        tokenSource: "manual",
      },
    },
  };
}

/** global-settings.json: telemetry and auto-update off; `agent.settings.config` merges here. */
export function clineGlobalSettings(settings: CliSettings): Record<string, unknown> {
  return deepMerge({ telemetryOptOut: true, autoUpdateEnabled: false }, settings.config);
}

export const cline: HarnessPreset = {
  name: "cline",
  npmPackage: "cline",
  version: "3.0.65",
  provider: "openai_chat",

  configFiles(ctx) {
    return {
      [`${SETTINGS_DIR}/providers.json`]: prettyJson(providersFile(ctx)),
      [`${SETTINGS_DIR}/global-settings.json`]: prettyJson(clineGlobalSettings(settingsOf(ctx))),
    };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      CLINE_DIR: joinPath(ctx.homeDir, CLINE_DIR),
      OPENAI_API_KEY: ctx.sessionToken,
      // With telemetry off it still fetches feature flags from its vendor's data host at start;
      // this variable (its own test switch) swaps that client for a no-op one and does nothing else.
      E2E_TEST: "true",
      // Sessions run in this process: by default it starts a detached "hub" daemon on a fixed
      // loopback port (25463) that outlives the run and that concurrent sessions would share.
      CLINE_SESSION_BACKEND_MODE: "local",
      CLINE_DISABLE_CLINE_PASS_NOTICE: "1",
      DO_NOT_TRACK: "1",
    });
    const argv = [
      binPath(binDir, "cline"),
      "--json",
      "-P",
      PROVIDER_ID,
      "-m",
      ctx.agent.model,
      "-c",
      ctx.workDir,
      ...settings.extra_args,
      ctx.instruction,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseClineJson(stdout, exitCode);
  },

  artifacts: [`${CLINE_DIR}/data/sessions`],
};
