/**
 * Test outcomes read from one stream of a test command (its stdout, or its TAP report file). Built-in
 * formats: TAP (`ok 1 - name`, `not ok 2 - name`, as `node --test --test-reporter=tap` and many
 * runners print), pytest `-rA` summaries (`PASSED tests/x.py::test_y`), and plain `PASS name` /
 * `FAIL name` lines. A custom `result_pattern` is a regex with named groups `status` and `test`;
 * `passStatuses` adds words that mean a pass (case-insensitive) to ok/passed/pass/xfail/success.
 *
 * The code under test prints into the same stream, so a line is never trusted to override another:
 * a name reported twice is DUPLICATE (a shadow test of the same name, or a forged line), and a name
 * with any failing line is FAIL. A rerun-on-failure runner therefore needs `{{test}}` mode or a report.
 */
export type TestStatus = "PASS" | "FAIL" | "DUPLICATE";

const BUILT_IN: RegExp[] = [
  /^\s*(?<status>not ok|ok)\s+\d+\s+-\s+(?<test>.+?)(?:\s+#\s*(?<directive>.*))?\s*$/,
  /^(?<status>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(?<test>\S+)/,
  /^(?<status>PASS|FAIL)\s*:?\s+(?<test>.+?)\s*$/,
];

const PASSING = new Set(["ok", "passed", "pass", "xfail", "success"]);

export function parseTestResults(
  log: string,
  customPattern?: string,
  passStatuses: readonly string[] = [],
): Map<string, TestStatus> {
  const patterns = customPattern ? [new RegExp(customPattern)] : BUILT_IN;
  const passing = new Set([...PASSING, ...passStatuses.map((s) => s.toLowerCase())]);
  const results = new TestOutcomes();
  for (const line of log.split(/\r?\n/)) {
    for (const re of patterns) {
      const m = re.exec(line);
      if (!m?.groups?.test || !m.groups.status) continue;
      // TAP `# SKIP` / `# TODO` directives are not passes of the code under test.
      const skipped = /^(skip|todo)\b/i.test(m.groups.directive ?? "");
      results.add(m.groups.test.trim(), passing.has(m.groups.status.toLowerCase()) && !skipped);
      break;
    }
  }
  return results.statuses;
}

/** Collects one outcome per report entry; the rules of the header above live here, once. */
export class TestOutcomes {
  readonly statuses = new Map<string, TestStatus>();

  add(name: string, passed: boolean): void {
    const seen = this.statuses.get(name);
    if (seen === undefined) this.statuses.set(name, passed ? "PASS" : "FAIL");
    else if (seen !== "FAIL") this.statuses.set(name, passed ? "DUPLICATE" : "FAIL");
  }
}
