import { claudeCode } from "./claude-code.ts";
import { codex } from "./codex.ts";
import { geminiCli } from "./gemini-cli.ts";
import { opencode } from "./opencode.ts";
import { pi } from "./pi.ts";
import type { HarnessPreset } from "./preset.ts";
import { qwenCode } from "./qwen-code.ts";

/** The six npm-installed agent CLIs, keyed by `agent.harness` (the `shell` preset lives apart). */
export const CLI_PRESETS = {
  claude_code: claudeCode,
  codex,
  gemini_cli: geminiCli,
  qwen_code: qwenCode,
  opencode,
  pi,
} as const satisfies Record<string, HarnessPreset>;

export type CliHarnessName = keyof typeof CLI_PRESETS;
