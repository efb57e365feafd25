import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Evaluator } from "./evaluator.ts";
import { sessionCompleted } from "./session-completed.ts";

/** Built-in evaluator name (TaskRequest.evaluator.strategy) -> evaluator. One line per evaluator. */
export const evaluators: Record<string, Evaluator> = {
  session_completed: sessionCompleted,
};

/** A built-in name, or a module path whose default export is an Evaluator. */
export async function resolveEvaluator(strategy: string): Promise<Evaluator> {
  const builtIn = evaluators[strategy];
  if (builtIn) return builtIn;
  if (!/[/\\]|\.(m?js|ts)$/.test(strategy)) {
    throw new Error(
      `evaluator.strategy: unknown evaluator ${JSON.stringify(strategy)} (built-in: ${Object.keys(evaluators).join(", ")}; or a module path)`,
    );
  }
  const url = pathToFileURL(isAbsolute(strategy) ? strategy : resolve(strategy)).href;
  const mod = (await import(url)) as { default?: Evaluator };
  if (!mod.default || typeof mod.default.evaluate !== "function") {
    throw new Error(`evaluator.strategy: module ${strategy} must default-export {name, evaluate(trajectory, ctx)}`);
  }
  return mod.default;
}
