/**
 * Test outcomes read from a test command's log. Built-in formats: TAP (`ok 1 - name`, `not ok 2 -
 * name`, as `node --test --test-reporter=tap` and many runners print), pytest `-rA` summaries
 * (`PASSED tests/x.py::test_y`), and plain `PASS name` / `FAIL name` lines. A custom
 * `result_pattern` is a regex with named groups `status` and `test`; `passStatuses` adds words
 * that mean a pass (case-insensitive) to ok/passed/pass/xfail/success.
 */
export type TestStatus = "PASS" | "FAIL";

const BUILT_IN: RegExp[] = [
  /^\s*(?<status>not ok|ok)\s+\d+\s+-\s+(?<test>.+?)(?:\s+#\s*(?<directive>.*))?\s*$/,
  /^(?<status>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(?<test>\S+)/,
  /^(?<status>PASS|FAIL)\s*:?\s+(?<test>.+?)\s*$/,
];

const PASSING = new Set(["ok", "passed", "pass", "xfail", "success"]);

/** Last outcome per test name (a rerun in the same log overrides an earlier line). */
export function parseTestResults(
  log: string,
  customPattern?: string,
  passStatuses: readonly string[] = [],
): Map<string, TestStatus> {
  const patterns = customPattern ? [new RegExp(customPattern)] : BUILT_IN;
  const passing = new Set([...PASSING, ...passStatuses.map((s) => s.toLowerCase())]);
  const out = new Map<string, TestStatus>();
  for (const line of log.split(/\r?\n/)) {
    for (const re of patterns) {
      const m = re.exec(line);
      if (!m?.groups?.test || !m.groups.status) continue;
      // TAP `# SKIP` / `# TODO` directives are not passes of the code under test.
      const skipped = /^(skip|todo)\b/i.test(m.groups.directive ?? "");
      out.set(m.groups.test.trim(), passing.has(m.groups.status.toLowerCase()) && !skipped ? "PASS" : "FAIL");
      break;
    }
  }
  return out;
}
