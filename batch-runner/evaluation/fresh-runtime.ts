import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "../runtime/runtime.ts";

/**
 * Fresh evaluation runtimes (swe_patch applies the agent's patch in one): created from the same
 * image, env and prepare steps as the agent's, so the repo is as the agent first saw it. With
 * `prewarm`, the first one is built right away (while the agent runs) and handed out on first use.
 */
export interface FreshRuntimes {
  get(): Promise<Runtime>;
  /** Stops every runtime handed out or prewarmed (evaluators stop theirs too; stop is idempotent). */
  dispose(): Promise<void>;
}

export interface FreshRuntimeOptions {
  factory: RuntimeFactory;
  spec: RuntimeSpecInput;
  prepare: string[];
  timeoutMs: number;
  prewarm: boolean;
}

export function freshRuntimes(opts: FreshRuntimeOptions): FreshRuntimes {
  const created: Runtime[] = [];
  let disposed = false;
  const build = async (): Promise<Runtime> => {
    const runtime = await opts.factory.create(opts.spec);
    created.push(runtime);
    if (disposed) {
      await runtime.stop();
      throw new Error("the session ended before its evaluation runtime was ready");
    }
    for (const [i, step] of opts.prepare.entries()) {
      const res = await runtime.exec(["sh", "-c", step], { timeoutMs: opts.timeoutMs });
      if (res.exitCode !== 0) {
        await runtime.stop().catch(() => {});
        const why = res.timedOut ? "timed out" : `exited ${res.exitCode}`;
        throw new Error(
          `evaluation runtime: runtime.prepare[${i}] ${why}: ${(res.stderr || res.stdout).trim().slice(-500) || "(no output)"}`,
        );
      }
    }
    return runtime;
  };
  let warm: Promise<Runtime> | null = opts.prewarm ? build() : null;
  // A prewarm failure is reported when the evaluator asks for the runtime, not as an unhandled rejection.
  warm?.catch(() => {});
  return {
    get() {
      const w = warm;
      warm = null;
      return w ?? build();
    },
    async dispose() {
      disposed = true;
      if (warm) await warm.catch(() => null);
      await Promise.all(created.map((r) => r.stop().catch(() => {})));
    },
  };
}
