import { TestOutcomes, type TestStatus } from "./test-results.ts";

/**
 * Test outcomes from a JUnit XML report (`node --test --test-reporter=junit`, `pytest --junitxml`,
 * jest-junit, surefire). Each `<testcase>` counts under its `name` and under `classname.name`; a
 * failure, error or skip in its body is a failure; the duplicate and failure rules of test-results.ts
 * apply. A regex reader rather than an XML parser: the report is one flat, runner-written format, and
 * attribute values are read quoted (node leaves `>` unescaped in them).
 */
const TESTCASE = /<testcase((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTRIBUTE = /([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const NOT_A_PASS = /<(failure|error|skipped)\b/;

export function parseJunitReport(xml: string): Map<string, TestStatus> {
  const results = new TestOutcomes();
  for (const m of xml.matchAll(TESTCASE)) {
    const attrs = new Map<string, string>();
    for (const a of (m[1] ?? "").matchAll(ATTRIBUTE)) attrs.set(a[1], decode(a[2] ?? a[3] ?? ""));
    const name = attrs.get("name");
    if (!name) continue;
    let passed = true;
    if (m[2] !== "/") {
      const start = (m.index ?? 0) + m[0].length;
      const end = xml.indexOf("</testcase>", start);
      // An unclosed case is a truncated report: nothing in it counts as a pass.
      passed = end !== -1 && !NOT_A_PASS.test(xml.slice(start, end));
    }
    const classname = attrs.get("classname");
    results.add(name, passed);
    if (classname) results.add(`${classname}.${name}`, passed);
  }
  return results.statuses;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, ref: string) => {
    if (ref[0] !== "#") return ENTITIES[ref] ?? whole;
    const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
    return Number.isInteger(code) && code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}
