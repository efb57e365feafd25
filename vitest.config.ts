import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Tests live under test/ only; product folders hold none.
    include: ["test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/.wrangler/**"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Stops the real engines (vLLM) test files started, once, at the end of the run.
    globalSetup: ["./test/support/real-engine-teardown.ts"],
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
