import type { McpServer } from "../../shared/schemas/mcp-servers.ts";
import { parseGeminiJson } from "./json-output.ts";
import { geminiMcpServers } from "./mcp-config.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  CliSettings,
  deepMerge,
  parseSettings,
  prettyJson,
  withAgentEnv,
} from "./preset-options.ts";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("gemini_cli", CliSettings, ctx.agent.settings);
}

/** `~/.gemini/settings.json`: API-key auth selected, every background fetch off. */
export function geminiSettings(settings: CliSettings, mcpServers: McpServer[] = []): Record<string, unknown> {
  const base = {
    // Without a selected auth type a headless run stops and asks how to log in.
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: {
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
      // Gemini counts attempts, not retries, and needs at least 1.
      maxAttempts: settings.max_retries + 1,
    },
    ...(mcpServers.length ? { mcpServers: geminiMcpServers("gemini_cli", mcpServers) } : {}),
  };
  return deepMerge(base, settings.config);
}

export const geminiCli: HarnessPreset = {
  name: "gemini_cli",
  npmPackage: "@google/gemini-cli",
  version: "0.61.0",
  provider: "google",

  configFiles(ctx) {
    return { ".gemini/settings.json": prettyJson(geminiSettings(settingsOf(ctx), ctx.agent.mcp_servers)) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      // The genai SDK appends `/v1beta/models/...` itself.
      GOOGLE_GEMINI_BASE_URL: ctx.proxyUrl,
      GEMINI_API_KEY: ctx.sessionToken,
      GEMINI_MODEL: ctx.agent.model,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      GEMINI_TELEMETRY_ENABLED: "false",
    });
    const argv = [
      binPath(binDir, "gemini"),
      // Only yolo mode offers the shell, write and edit tools to a headless run.
      "--approval-mode=yolo",
      // An explicit model also skips the routing call to a flash-lite model.
      "-m",
      ctx.agent.model,
      "--output-format",
      "json",
      ...settings.extra_args,
      "-p",
      ctx.instruction,
    ];
    return { argv, env, stdin: "" };
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseGeminiJson(stdout, exitCode);
  },

  // Chat recordings and logs per project.
  artifacts: [".gemini/tmp"],
};
