import { parseOpenclawJson } from "./json-output.ts";
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

const STATE_DIR = ".openclaw";
const CONFIG_FILE = `${STATE_DIR}/polar.json`;
const PROVIDER_ID = "polar";
/** The config names a variable (OpenClaw substitutes `${VAR}`), keeping the token out of files. */
const KEY_VAR = "POLAR_API_KEY";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("openclaw", CliSettings, ctx.agent.settings);
}

/**
 * The run's config (`agent exec --config`): one OpenAI-compatible provider at the proxy serving the
 * task's model, update checks and feature statistics off, the two tools whose per-turn snapshot
 * breaks prefix merging denied. `agent.settings.config` merges here.
 */
export function openclawConfig(ctx: PresetContext, settings: CliSettings): Record<string, unknown> {
  const base = {
    models: {
      providers: {
        [PROVIDER_ID]: {
          baseUrl: openAiBaseUrl(ctx.proxyUrl),
          apiKey: `\${${KEY_VAR}}`,
          api: "openai-completions",
          models: [{ id: ctx.agent.model, name: ctx.agent.model, reasoning: false, input: ["text"] }],
        },
      },
    },
    agents: { defaults: { model: { primary: `${PROVIDER_ID}/${ctx.agent.model}` } } },
    update: { checkOnStart: false, auto: { enabled: false } },
    telemetry: { enabled: false },
    // With `process` or `sessions_spawn` offered, OpenClaw appends a runtime snapshot (active exec
    // sessions, active sub-agents) as a user message after the conversation on every call and
    // drops it from the next one, so no call's prompt extends the last: every turn would be its
    // own trace. `agent.settings.config.tools.deny` puts them back (docs/harnesses.md).
    tools: { deny: ["process", "sessions_spawn"] },
  };
  return deepMerge(base, settings.config);
}

export const openclaw: HarnessPreset = {
  name: "openclaw",
  npmPackage: "openclaw",
  version: "2026.9.6",
  provider: "openai_chat",

  configFiles(ctx) {
    return { [CONFIG_FILE]: prettyJson(openclawConfig(ctx, settingsOf(ctx))) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      OPENCLAW_STATE_DIR: joinPath(ctx.homeDir, STATE_DIR),
      [KEY_VAR]: ctx.sessionToken,
      OPENCLAW_NO_AUTO_UPDATE: "1",
      OPENCLAW_NO_ONBOARD: "1",
      OPENCLAW_NO_PROMPT: "1",
      OPENCLAW_DISABLE_BONJOUR: "1",
      DO_NOT_TRACK: "1",
    });
    const argv = [
      binPath(binDir, "openclaw"),
      "agent",
      "exec",
      "--config",
      joinPath(ctx.homeDir, CONFIG_FILE),
      "--model",
      `${PROVIDER_ID}/${ctx.agent.model}`,
      "--cwd",
      ctx.workDir,
      "--json",
      ...settings.extra_args,
      ctx.instruction,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseOpenclawJson(stdout, exitCode);
  },

  // Its session store is a SQLite database under the state dir; the JSON envelope is the record.
  artifacts: [],
};
