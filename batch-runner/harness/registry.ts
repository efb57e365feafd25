import type { HARNESSES } from "../../shared/schemas/task.ts";
import { browserUse } from "./browser-use.ts";
import { claudeCode } from "./claude-code.ts";
import { cline } from "./cline.ts";
import { codex } from "./codex.ts";
import { geminiCli } from "./gemini-cli.ts";
import { hermes } from "./hermes.ts";
import { miniSweAgent } from "./mini-swe-agent.ts";
import { openclaw } from "./openclaw.ts";
import { opencode } from "./opencode.ts";
import { openhandsSdk } from "./openhands-sdk.ts";
import { pi } from "./pi.ts";
import type { HarnessPreset } from "./preset.ts";
import { qwenCode } from "./qwen-code.ts";
import { shellPreset } from "./shell.ts";

type HarnessName = (typeof HARNESSES)[number];

/**
 * The computer-use harnesses (docs/computer-use.md): they drive a browser, not a shell, so the
 * coding presets' shared tests (a scripted shell task, recorded shell-tool traffic) do not apply;
 * each has its own.
 */
export const COMPUTER_USE_PRESETS = {
  browser_use: browserUse,
} as const satisfies Partial<Record<HarnessName, HarnessPreset>>;

type ComputerUseHarnessName = keyof typeof COMPUTER_USE_PRESETS;

/** The installed agent harnesses (npm CLIs and pip-installed Python agents), keyed by `agent.harness` (the `shell` preset installs nothing). */
export const CLI_PRESETS = {
  claude_code: claudeCode,
  codex,
  gemini_cli: geminiCli,
  qwen_code: qwenCode,
  opencode,
  pi,
  mini_swe_agent: miniSweAgent,
  hermes,
  openhands_sdk: openhandsSdk,
  openclaw,
  cline,
} as const satisfies Record<Exclude<HarnessName, "shell" | ComputerUseHarnessName>, HarnessPreset>;

export type CliHarnessName = keyof typeof CLI_PRESETS;

/**
 * Harness name (TaskRequest.agent.harness, listed once in `HARNESSES`) -> preset, total: a name added
 * there without a preset here fails to compile.
 */
export const harnessPresets: Record<HarnessName, HarnessPreset> = {
  shell: shellPreset,
  ...CLI_PRESETS,
  ...COMPUTER_USE_PRESETS,
};

export function presetFor(name: string): HarnessPreset {
  if (!Object.hasOwn(harnessPresets, name)) {
    throw new Error(
      `agent.harness: no preset named ${JSON.stringify(name)} (available: ${Object.keys(harnessPresets).join(", ")})`,
    );
  }
  return harnessPresets[name as HarnessName];
}
