import { OpencodeSettings } from "../../shared/schemas/task-settings.ts";
import { parseOpencodeJsonl } from "./json-output.ts";
import { opencodeMcp } from "./mcp-config.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  deepMerge,
  joinPath,
  openAiBaseUrl,
  parseSettings,
  prettyJson,
  withAgentEnv,
} from "./preset-options.ts";

const PROVIDER_ID = "polar";
const KEY_VAR = "POLAR_API_KEY";
/** XDG dirs inside the session HOME: config in, sessions and logs out (the artifacts). */
const CONFIG_DIR = ".config/opencode";
const CONFIG_FILE = `${CONFIG_DIR}/opencode.json`;

/*
 * At startup OpenCode npm-installs `@opencode-ai/plugin` into every config dir whose
 * node_modules is missing or whose package-lock.json lacks a dependency of package.json, a
 * registry fetch on every fresh HOME. A lock file that already lists the package (and an
 * existing node_modules) makes that check pass; the package is only needed by local plugins,
 * which `--pure` turns off anyway.
 */
const PLUGIN_INSTALL_STUBS = {
  [`${CONFIG_DIR}/package-lock.json`]: prettyJson({
    name: "opencode-config",
    lockfileVersion: 3,
    packages: { "": { dependencies: { "@opencode-ai/plugin": "*" } } },
  }),
  [`${CONFIG_DIR}/node_modules/.polar-keep`]: "",
};

function settingsOf(ctx: PresetContext): OpencodeSettings {
  return parseSettings("opencode", OpencodeSettings, ctx.agent.settings);
}

/** opencode.json: one openai-compatible provider pointing at the proxy, everything allowed. */
export function opencodeConfig(ctx: PresetContext, settings: OpencodeSettings) {
  const model = ctx.agent.model;
  const base = {
    model: `${PROVIDER_ID}/${model}`,
    small_model: `${PROVIDER_ID}/${model}`,
    autoupdate: false,
    share: "disabled",
    provider: {
      [PROVIDER_ID]: {
        // Bundled in the binary, so nothing is installed at run time.
        npm: "@ai-sdk/openai-compatible",
        name: "Polar",
        options: { baseURL: openAiBaseUrl(ctx.proxyUrl), apiKey: `{env:${KEY_VAR}}` },
        models: { [model]: { name: model } },
      },
    },
    permission: { edit: "allow", bash: "allow", webfetch: "deny" },
    // Language servers and formatters are downloaded on first use.
    lsp: false,
    formatter: false,
    ...(ctx.agent.mcp_servers?.length ? { mcp: opencodeMcp(ctx.agent.mcp_servers) } : {}),
  };
  return deepMerge(base, settings.config);
}

export const opencode: HarnessPreset = {
  name: "opencode",
  npmPackage: "opencode-ai",
  version: "1.18.33",
  provider: "openai_chat",

  configFiles(ctx) {
    return {
      [CONFIG_FILE]: prettyJson(opencodeConfig(ctx, settingsOf(ctx))),
      ...PLUGIN_INSTALL_STUBS,
    };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const home = ctx.homeDir;
    const env = withAgentEnv(ctx, {
      HOME: home,
      XDG_CONFIG_HOME: joinPath(home, ".config"),
      XDG_DATA_HOME: joinPath(home, ".local/share"),
      XDG_CACHE_HOME: joinPath(home, ".cache"),
      XDG_STATE_HOME: joinPath(home, ".local/state"),
      OPENCODE_CONFIG: joinPath(home, CONFIG_FILE),
      [KEY_VAR]: ctx.sessionToken,
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      // The work dir's own opencode.json / CLAUDE.md must not change the harness under test.
      OPENCODE_DISABLE_PROJECT_CONFIG: "1",
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
      OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
    });
    const argv = [
      binPath(binDir, "opencode"),
      "run",
      "--format",
      "json",
      "-m",
      `${PROVIDER_ID}/${ctx.agent.model}`,
      "--pure",
      "--auto",
      ...(settings.title ? ["--title", settings.title] : []),
      ...settings.extra_args,
    ];
    // The instruction goes on stdin: `opencode run` joins its message words and wraps one holding a
    // space in quotes with its own quotes escaped, so as an argument every instruction reached the
    // model as `"...\"..."` (run's message handling in the 1.18.33 binary); stdin is taken as is.
    return { argv, env, stdin: ctx.instruction };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseOpencodeJsonl(stdout, exitCode);
  },

  // Sessions, messages and parts live in one SQLite database (with its -wal/-shm files), next to
  // the logs: the whole data dir, so the copy is consistent.
  artifacts: [".local/share/opencode"],
};
