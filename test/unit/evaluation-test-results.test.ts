import { describe, expect, it } from "vitest";
import { parseTestResults } from "../../batch-runner/evaluation/test-results.ts";

describe("test results from a log", () => {
  it("reads TAP, including skips and todos as not passing", () => {
    const log = [
      "TAP version 13",
      "# Subtest: mul multiplies",
      "ok 1 - mul multiplies",
      "not ok 2 - add adds",
      "ok 3 - flaky thing # SKIP not today",
      "  ok 1 - nested case",
    ].join("\n");
    const r = parseTestResults(log);
    expect(Object.fromEntries(r)).toEqual({
      "mul multiplies": "PASS",
      "add adds": "FAIL",
      "flaky thing": "FAIL",
      "nested case": "PASS",
    });
  });

  it("reads pytest -rA summaries and PASS/FAIL lines; the last verdict wins", () => {
    const log = [
      "PASSED tests/test_math.py::test_mul",
      "FAILED tests/test_math.py::test_add - AssertionError",
      "ERROR tests/test_io.py::test_read",
      "PASS: suite/one",
      "FAIL suite/two",
      "PASSED tests/test_math.py::test_add",
    ].join("\n");
    const r = parseTestResults(log);
    expect(r.get("tests/test_math.py::test_mul")).toBe("PASS");
    expect(r.get("tests/test_math.py::test_add")).toBe("PASS");
    expect(r.get("tests/test_io.py::test_read")).toBe("FAIL");
    expect(r.get("suite/one")).toBe("PASS");
    expect(r.get("suite/two")).toBe("FAIL");
  });

  it("uses a custom pattern with named groups instead of the built-ins", () => {
    const log = "[x] alpha\n[ ] beta\nok 1 - ignored";
    const r = parseTestResults(log, "^\\[(?<status>x| )\\] (?<test>\\w+)$");
    // "x" is no built-in pass word until pass_statuses says so.
    expect(r.get("alpha")).toBe("FAIL");
    expect(r.has("ignored")).toBe(false);
    const withX = parseTestResults(log, "^\\[(?<status>x| )\\] (?<test>\\w+)$", ["x"]);
    expect(Object.fromEntries(withX)).toEqual({ alpha: "PASS", beta: "FAIL" });
    const r2 = parseTestResults("alpha: passed\nbeta: failed", "^(?<test>\\w+): (?<status>\\w+)$");
    expect(Object.fromEntries(r2)).toEqual({ alpha: "PASS", beta: "FAIL" });
  });
});
