/**
 * The evaluator of the desktop code tasks (`evaluator.strategy:
 * "./examples/computer-use/desktop-judge.mjs"`, resolved from the runner's directory): reward 1 when
 * what was typed into the Tk app's box (the app writes it to `.desktop/typed.txt` on Return or
 * Submit) is `config.code`, the code the app showed. The agent's answer plays no part.
 *
 * The file is in the work dir, written by the app as the agent's own user, in the agent's own
 * sandbox: every process the agent runs can write it, and nothing there can be kept from them (one
 * user, one namespace). So only a harness without a shell can be trusted not to write it, and any
 * other is refused (the session ends ERROR): a shell could write the code itself and be paid as if
 * it had been typed. Every preset that takes MCP servers today has a shell (Claude Code's Bash,
 * Codex's and Gemini CLI's shell tools, ...), so this judge pays none of them: the example task
 * shows the desktop reaching the model, not a reward to train on.
 *
 *   "evaluator": {"strategy": "./examples/computer-use/desktop-judge.mjs", "config": {"code": "K7Q-42X"}}
 */

const TYPED = ".desktop/typed.txt";
/** More than any code; a longer file is read up to here (and so is not the code). */
const MAX_BYTES = 4096;
/**
 * Harnesses whose agent has no shell and no tool that writes a work-dir path it names. None of the
 * presets that start a task's MCP servers qualifies today; a harness added here must.
 */
const SHELL_FREE_HARNESSES = [];

export default {
  name: "desktop_code",
  async evaluate(_trajectory, ctx) {
    const code = ctx.config.code;
    if (typeof code !== "string" || !code)
      throw new Error('evaluator.config.code: the code the app shows, e.g. "K7Q-42X"');
    if (!SHELL_FREE_HARNESSES.includes(ctx.harness)) {
      throw new Error(
        `desktop_code judges only sessions of a harness without a shell (none of the presets today): harness ${ctx.harness ?? "(not given)"} can write ${TYPED} itself, so the file proves nothing`,
      );
    }
    // Read inside the agent's own sandbox (a link the agent made there resolves there, never to a host file).
    const read = await ctx.runtime.exec(["head", "-c", String(MAX_BYTES), TYPED], { timeoutMs: 30_000 });
    const typed = read.exitCode === 0 ? read.stdout : null;
    return { outcome_reward: typed === code ? 1 : 0, metadata: { file: TYPED, typed } };
  },
};
