import { claudeCode } from "./claude-code.ts";
import { codex } from "./codex.ts";
import { geminiCli } from "./gemini-cli.ts";
import { opencode } from "./opencode.ts";
import { pi } from "./pi.ts";
import type { HarnessPreset } from "./preset.ts";
import { qwenCode } from "./qwen-code.ts";
import { shellPreset } from "./shell.ts";

/** Harness name (TaskRequest.agent.harness) -> preset. One line per preset. */
export const harnessPresets: Record<string, HarnessPreset> = {
  shell: shellPreset,
  claude_code: claudeCode,
  codex,
  gemini_cli: geminiCli,
  qwen_code: qwenCode,
  opencode,
  pi,
};

export function presetFor(name: string): HarnessPreset {
  const preset = harnessPresets[name];
  if (!preset) {
    throw new Error(
      `agent.harness: no preset named ${JSON.stringify(name)} (available: ${Object.keys(harnessPresets).join(", ")})`,
    );
  }
  return preset;
}
