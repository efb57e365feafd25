import { ShellSettings } from "../../shared/schemas/task-settings.ts";
import { POLAR_ROOT } from "../runtime/bwrap.ts";
import { shellQuote } from "../runtime/shell-quote.ts";
import type { HarnessInvocation, HarnessOutcome, HarnessPreset, PresetContext } from "./preset.ts";
import { parseSettings } from "./preset-options.ts";

/** Fills `{{instruction}}` (shell-quoted), `{{polar_root}}`, `{{work_dir}}`, `{{model}}` in a command line. */
export function renderCommand(template: string, ctx: PresetContext): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, name: string) => {
    switch (name) {
      case "instruction":
        return shellQuote(ctx.instruction);
      case "polar_root":
        return shellQuote(POLAR_ROOT);
      case "work_dir":
        return shellQuote(ctx.workDir);
      case "model":
        return shellQuote(ctx.agent.model);
      default:
        return whole;
    }
  });
}

/**
 * A team's own agent, given as a command line in `agent.settings.command`. It gets the proxy in the
 * variables most SDKs read (OpenAI, Anthropic, Gemini) with the session token as the key.
 */
export const shellPreset: HarnessPreset = {
  name: "shell",
  npmPackage: null,
  version: null,
  provider: "openai_chat",
  artifacts: [],
  configFiles() {
    return {};
  },
  invocation(ctx: PresetContext): HarnessInvocation {
    const { command } = parseSettings("shell", ShellSettings, ctx.agent.settings);
    return {
      argv: ["sh", "-c", renderCommand(command, ctx)],
      env: {
        OPENAI_BASE_URL: `${ctx.proxyUrl}/v1`,
        OPENAI_API_KEY: ctx.sessionToken,
        OPENAI_MODEL: ctx.agent.model,
        ANTHROPIC_BASE_URL: ctx.proxyUrl,
        ANTHROPIC_API_KEY: ctx.sessionToken,
        GOOGLE_GEMINI_BASE_URL: ctx.proxyUrl,
        GEMINI_API_KEY: ctx.sessionToken,
        POLAR_PROXY_URL: ctx.proxyUrl,
        POLAR_SESSION_TOKEN: ctx.sessionToken,
        POLAR_MODEL: ctx.agent.model,
        ...ctx.agent.env,
      },
    };
  },
  parseOutput(stdout: string, _stderr: string, exitCode: number | null): HarnessOutcome {
    const text = stdout.trim();
    return { finalAnswer: text === "" ? null : text.slice(-16_384), success: exitCode === 0 };
  },
};
