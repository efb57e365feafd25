import { shellQuote } from "../runtime/shell-quote.ts";

/**
 * Where each harness reads skills, under the session HOME: what Harbor's agents copy a task's
 * `environment.skills_dir` into (harbor/agents/installed/*: `_build_register_skills_command`),
 * moved to the config dirs Polar's presets use (`.claude` is CLAUDE_CONFIG_DIR, `.hermes` HERMES_HOME,
 * `.config` XDG_CONFIG_HOME). A harness not listed reads no skills dir.
 */
export const SKILLS_DIRS: Partial<Record<string, string>> = {
  claude_code: ".claude/skills",
  codex: ".agents/skills",
  pi: ".agents/skills",
  opencode: ".config/opencode/skills",
  cline: ".cline/skills",
  hermes: ".hermes/skills",
};

/**
 * The `runtime.prepare` step copying the image's skills dir into the harness's (at INIT, before the
 * harness starts), or a warning when the harness has none. Like Harbor, a missing dir copies nothing.
 */
export function skillsPrepare(
  harness: string,
  skillsDir: string,
): { prepare: string | null; warning: string | null } {
  const target = SKILLS_DIRS[harness];
  if (target === undefined)
    return {
      prepare: null,
      warning: `task.toml: environment.skills_dir = ${JSON.stringify(skillsDir)}: harness ${harness} reads no skills dir (those that do: ${Object.keys(SKILLS_DIRS).join(", ")}); the skills stay in the image at that path`,
    };
  const from = shellQuote(`${skillsDir.replace(/\/+$/, "")}/.`);
  return {
    prepare: `if [ -d ${shellQuote(skillsDir)} ]; then mkdir -p "$HOME/${target}" && cp -R ${from} "$HOME/${target}/"; fi`,
    warning: null,
  };
}
