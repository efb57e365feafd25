import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "test/**/*.test.ts",
      "shared/**/*.test.ts",
      "proxy-worker/**/*.test.ts",
      "batch-runner/**/*.test.ts",
    ],
    exclude: ["**/node_modules/**", "**/.wrangler/**"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
