import { describe, expect, it } from "vitest";
import { parseJunitReport } from "../../batch-runner/evaluation/junit-report.ts";

// What `node --test --test-reporter=junit` wrote for a file with a failing, a passing (escaped name),
// a nested and a skipped test (node 24), trimmed of the failure's stack.
const NODE_REPORT = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="add adds" time="0.000923" classname="test" file="/tmp/jt/a.test.mjs" failure="Expected values to be strictly equal:&#10;&#10;1 !== 2&#10;">
		<failure type="testCodeFailure" message="Expected values to be strictly equal:&#10;&#10;1 !== 2">
      at TestContext.&lt;anonymous> (file:///tmp/jt/a.test.mjs:3:31)
		</failure>
	</testcase>
	<testcase name="a &amp; &lt;b>" time="0.000169" classname="test" file="/tmp/jt/a.test.mjs"/>
	<testsuite name="suite" time="0.000859" disabled="0" errors="0" tests="2" failures="0" skipped="1">
		<testcase name="inner" time="0.000094" classname="suite" file="/tmp/jt/a.test.mjs"/>
		<testcase name="skipme" time="0.000531" classname="suite" file="/tmp/jt/a.test.mjs">
			<skipped type="skipped" message="true"/>
		</testcase>
	</testsuite>
</testsuites>`;

describe("JUnit reports", () => {
  it("reads node's report: failures and skips are not passes, names decoded, classname.name too", () => {
    expect(Object.fromEntries(parseJunitReport(NODE_REPORT))).toEqual({
      "add adds": "FAIL",
      "test.add adds": "FAIL",
      "a & <b>": "PASS",
      "test.a & <b>": "PASS",
      inner: "PASS",
      "suite.inner": "PASS",
      skipme: "FAIL",
      "suite.skipme": "FAIL",
    });
  });

  it("reads pytest's shape (errors, single quotes) and applies the duplicate rule", () => {
    const xml = `<testsuite><testcase classname='tests.test_x' name='test_a'><error message="boom"/></testcase>
<testcase classname="tests.test_x" name="test_b"></testcase>
<testcase classname="tests.test_y" name="test_b"/></testsuite>`;
    expect(Object.fromEntries(parseJunitReport(xml))).toEqual({
      test_a: "FAIL",
      "tests.test_x.test_a": "FAIL",
      test_b: "DUPLICATE",
      "tests.test_x.test_b": "PASS",
      "tests.test_y.test_b": "PASS",
    });
  });

  it("counts nothing of a cut report as a pass", () => {
    expect(parseJunitReport('<testsuites><testcase name="add adds">').get("add adds")).toBe("FAIL");
    expect(parseJunitReport("not xml at all").size).toBe(0);
  });
});
