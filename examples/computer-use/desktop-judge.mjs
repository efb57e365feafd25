/**
 * The evaluator of the desktop code tasks (`evaluator.strategy:
 * "./examples/computer-use/desktop-judge.mjs"`, resolved from the runner's directory): reward 1 when
 * what was typed into the Tk app's box (the app writes it to `.desktop/typed.txt` on Return or
 * Submit) is `config.code`, the code the app showed. The agent's answer plays no part.
 *
 *   "evaluator": {"strategy": "./examples/computer-use/desktop-judge.mjs", "config": {"code": "K7Q-42X"}}
 */

const TYPED = ".desktop/typed.txt";
/** More than any code; a longer file is read up to here (and so is not the code). */
const MAX_BYTES = 4096;

export default {
  name: "desktop_code",
  async evaluate(_trajectory, ctx) {
    const code = ctx.config.code;
    if (typeof code !== "string" || !code)
      throw new Error('evaluator.config.code: the code the app shows, e.g. "K7Q-42X"');
    // Read inside the agent's own sandbox (a link the agent made there resolves there, never to a host file).
    const read = await ctx.runtime.exec(["head", "-c", String(MAX_BYTES), TYPED], { timeoutMs: 30_000 });
    const typed = read.exitCode === 0 ? read.stdout : null;
    return { outcome_reward: typed === code ? 1 : 0, metadata: { file: TYPED, typed } };
  },
};
