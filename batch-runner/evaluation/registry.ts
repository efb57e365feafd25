import { loadEvaluatorModule, looksLikeModulePath } from "./custom-module.ts";
import type { Evaluator } from "./evaluator.ts";
import { allowedModulePath, type ModulePolicy } from "./evaluator-dirs.ts";
import { harbor } from "./harbor.ts";
import { sessionCompleted } from "./session-completed.ts";
import { swePatch } from "./swe-patch.ts";
import { testOnOutput } from "./test-on-output.ts";

/** Built-in evaluator name (TaskRequest.evaluator.strategy) -> evaluator. One line per evaluator. */
export const evaluators: Record<string, Evaluator> = {
  session_completed: sessionCompleted,
  test_on_output: testOnOutput,
  swe_patch: swePatch,
  harbor,
};

/**
 * A built-in name, or a module path exporting an evaluator (see custom-module.ts), loaded only from
 * the operator's allowlisted dirs (see evaluator-dirs.ts; no policy = no module loads).
 */
export async function resolveEvaluator(
  strategy: string,
  modules: ModulePolicy = { allowed: [], denied: [] },
): Promise<Evaluator> {
  const builtIn = Object.hasOwn(evaluators, strategy) ? evaluators[strategy] : undefined;
  if (builtIn) return builtIn;
  if (!looksLikeModulePath(strategy)) {
    throw new Error(
      `evaluator.strategy: unknown evaluator ${JSON.stringify(strategy)} (built-in: ${Object.keys(evaluators).join(", ")}; or a module path)`,
    );
  }
  return loadEvaluatorModule(await allowedModulePath(strategy, modules, "evaluator.strategy"));
}
