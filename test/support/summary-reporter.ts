import type { Reporter, TestModule } from "vitest/node";

/** How many of the slowest files the closing lines name: where to look when the suite nears its budget. */
const SLOWEST_SHOWN = 15;

/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, which CI reads
 * whatever the runner; vitest's own summary stays as it is. Before it, the slowest files with
 * their wall seconds, since CI's whole run has a fixed budget and a file's time is what grows.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of modules) {
      if (mod.state() === "failed" && [...mod.children.allTests()].length === 0) failed++;
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
    }
    const slowest = modules
      .map((mod) => ({ file: mod.relativeModuleId, ms: mod.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SLOWEST_SHOWN);
    if (slowest.length > 1) {
      process.stdout.write("\nslowest files (s):\n");
      for (const s of slowest) process.stdout.write(`  ${(s.ms / 1000).toFixed(1).padStart(7)}  ${s.file}\n`);
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
