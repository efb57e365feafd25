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

  it("reads pytest -rA summaries and PASS/FAIL lines; a later pass never overrides a failure", () => {
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
    expect(r.get("tests/test_math.py::test_add")).toBe("FAIL");
    expect(r.get("tests/test_io.py::test_read")).toBe("FAIL");
    expect(r.get("suite/one")).toBe("PASS");
    expect(r.get("suite/two")).toBe("FAIL");
  });

  it("fails a name reported twice, and a name with any failing line, wherever the lines are", () => {
    // Issue 34: a shadow test of the same name after the real failure used to win as the last line.
    const shadowed = parseTestResults("not ok 1 - add adds\nok 2 - mul multiplies\nok 3 - add adds");
    expect(Object.fromEntries(shadowed)).toEqual({ "add adds": "FAIL", "mul multiplies": "PASS" });
    const forgedFirst = parseTestResults("ok 1 - add adds\nnot ok 2 - add adds");
    expect(forgedFirst.get("add adds")).toBe("FAIL");
    // Two passes of one name: one of them is not the hidden test.
    expect(parseTestResults("ok 1 - add adds\nok 2 - add adds").get("add adds")).toBe("DUPLICATE");
    expect(parseTestResults("PASS add adds\nPASS: add adds").get("add adds")).toBe("DUPLICATE");
    expect(parseTestResults("ok 1 - add adds\nok 2 - add adds\nnot ok 3 - add adds").get("add adds")).toBe(
      "FAIL",
    );
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
