import type { McpServer } from "../../shared/schemas/mcp-servers.ts";
import { parseQwenJson } from "./json-output.ts";
import { geminiMcpServers } from "./mcp-config.ts";
import type { HarnessPreset, PresetContext } from "./preset.ts";
import {
  binPath,
  CliSettings,
  deepMerge,
  openAiBaseUrl,
  parseSettings,
  prettyJson,
  withAgentEnv,
} from "./preset-options.ts";

function settingsOf(ctx: PresetContext): CliSettings {
  return parseSettings("qwen_code", CliSettings, ctx.agent.settings);
}

/** `~/.qwen/settings.json`: OpenAI-compatible auth, background memory and telemetry off. */
export function qwenSettings(settings: CliSettings, mcpServers: McpServer[] = []): Record<string, unknown> {
  const base = {
    security: { auth: { selectedType: "openai" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false },
    // Auto-memory makes extra model calls after the task that are not part of the episode.
    memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
    model: { generationConfig: { maxRetries: settings.max_retries } },
    ...(mcpServers.length ? { mcpServers: geminiMcpServers("qwen_code", mcpServers) } : {}),
  };
  return deepMerge(base, settings.config);
}

export const qwenCode: HarnessPreset = {
  name: "qwen_code",
  npmPackage: "@qwen-code/qwen-code",
  version: "0.24.4",
  provider: "openai_chat",

  configFiles(ctx) {
    return { ".qwen/settings.json": prettyJson(qwenSettings(settingsOf(ctx), ctx.agent.mcp_servers)) };
  },

  invocation(ctx, binDir) {
    const settings = settingsOf(ctx);
    const env = withAgentEnv(ctx, {
      HOME: ctx.homeDir,
      OPENAI_BASE_URL: openAiBaseUrl(ctx.proxyUrl),
      OPENAI_API_KEY: ctx.sessionToken,
      OPENAI_MODEL: ctx.agent.model,
      // The runtime is the sandbox; the yolo warning on every run is noise in the logs.
      QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
    });
    const argv = [
      binPath(binDir, "qwen"),
      "--yolo",
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
    return parseQwenJson(stdout, exitCode);
  },

  // Chat recordings (JSONL) per project; .qwen/tmp holds nothing after a headless run.
  artifacts: [".qwen/projects"],
};
