import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Tests live under test/ only; product folders hold none.
    include: ["test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/.wrangler/**"],
    pool: "forks",
    // Most files wait on child processes (harnesses, engines, servers), not on this one's CPU: on
    // 2 cores Vitest's default (one worker fewer than the cores) ran the suite one file at a time,
    // 22-25 min; three workers took 15.9 min with every test passing (BENCHMARKS.md "The suite").
    maxWorkers: Math.max(availableParallelism() - 1, 3),
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Stops the real engines (vLLM) test files started, once, at the end of the run.
    globalSetup: ["./test/support/real-engine-teardown.ts"],
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
