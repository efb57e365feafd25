import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Evaluator } from "../../batch-runner/evaluation/evaluator.ts";

/*
 * Evaluator for the harness e2e tests, loaded by path (`evaluator.strategy`). It runs while the
 * session's runtime is still alive, which is the only moment the agent's work dir and HOME can
 * be inspected: reward 1 when `config.file` holds `config.expect`, and the preset artifacts
 * (paths under HOME) that exist, so the test can check both after `polar run` tore down.
 */
const helloFile: Evaluator = {
  name: "hello_file",
  async evaluate(_trajectory, ctx) {
    const file = String(ctx.config.file ?? "hello.txt");
    const expected = String(ctx.config.expect ?? "");
    const read = await ctx.runtime.exec(["cat", file], { timeoutMs: 10_000 });
    const content = read.exitCode === 0 ? read.stdout : null;
    const artifacts = Array.isArray(ctx.config.artifacts) ? ctx.config.artifacts.map(String) : [];
    const present = artifacts.filter((path) => existsSync(join(ctx.runtime.homeDir, path)));
    return {
      outcome_reward: content?.trim() === expected ? 1 : 0,
      metadata: { file, content, artifacts_present: present },
    };
  },
};

export default helloFile;
