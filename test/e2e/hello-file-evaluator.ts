import type { Evaluator } from "../../batch-runner/evaluation/evaluator.ts";

/*
 * Evaluator for the harness e2e tests, loaded by path (`evaluator.strategy`). It runs while the
 * session's runtime is still alive, the only moment the agent's work dir can be inspected:
 * reward 1 when `config.file` holds `config.expect`, and the content in the metadata so the test
 * can check it after `polar run` tore the runtime down.
 */
const helloFile: Evaluator = {
  name: "hello_file",
  async evaluate(_trajectory, ctx) {
    const file = String(ctx.config.file ?? "hello.txt");
    const expected = String(ctx.config.expect ?? "");
    const read = await ctx.runtime.exec(["cat", file], { timeoutMs: 10_000 });
    const content = read.exitCode === 0 ? read.stdout : null;
    return {
      outcome_reward: content?.trim() === expected ? 1 : 0,
      metadata: { file, content },
    };
  },
};

export default helloFile;
