import type { Command } from "./command.ts";

/** Placeholder for a DESIGN.md command whose issue has not landed yet: it says so and fails. */
export function notBuilt(name: string, summary: string, usage: string): Command {
  return {
    summary: `${summary} (not built yet)`,
    usage,
    async run() {
      console.error(`polar ${name}: not built yet. See the open issues.`);
      return 3;
    },
  };
}
