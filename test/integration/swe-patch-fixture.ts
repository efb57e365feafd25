import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { shellQuote } from "../../batch-runner/runtime/shell-quote.ts";

/**
 * A tiny repository with a bug, built by the test: `add` subtracts. `tests/mul.test.mjs` passes and
 * ships with the repo (pass-to-pass); the add test is the evaluator's hidden file (fail-to-pass).
 * `stamp.txt` is random per preparation, so a patch that touches it cannot apply in a fresh runtime.
 */
export const HIDDEN_ADD_TEST = `import { test } from "node:test";
import assert from "node:assert/strict";
import { add } from "../src/math.mjs";
test("add adds", () => assert.equal(add(2, 3), 5));
`;

export async function buildBuggyRepo(): Promise<{ dir: string; prepare: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), "polar-swe-fixture-"));
  await mkdir(join(dir, "src"));
  await mkdir(join(dir, "tests"));
  await writeFile(
    join(dir, "src", "math.mjs"),
    "export function add(a, b) {\n  return a - b;\n}\n\nexport function mul(a, b) {\n  return a * b;\n}\n",
  );
  await writeFile(
    join(dir, "tests", "mul.test.mjs"),
    'import { test } from "node:test";\nimport assert from "node:assert/strict";\nimport { mul } from "../src/math.mjs";\ntest("mul multiplies", () => assert.equal(mul(2, 3), 6));\n',
  );
  const prepare = [
    `cp -R ${shellQuote(dir)}/. .`,
    "od -An -N16 -tx1 /dev/urandom > stamp.txt",
    "git init -q && git add -A && git -c user.name=polar -c user.email=polar@example.invalid commit -qm base",
  ];
  return { dir, prepare };
}

export const SWE_CONFIG = {
  test_command: "node --test --test-reporter=tap",
  fail_to_pass: ["add adds"],
  pass_to_pass: ["mul multiplies"],
  exclude_paths: ["tests"],
  files: { "tests/add.test.mjs": HIDDEN_ADD_TEST },
  timeout_seconds: 60,
};

/** Agent edits as shell commands (what a dry-run script's `shell:` lines run). */
export const EDITS = {
  fix: "sed -i 's/a - b/a + b/' src/math.mjs",
  fixButBreakMul: "sed -i 's/a - b/a + b/; s/a \\* b/a + b/' src/math.mjs",
  fixAndTouchStamp:
    "sed -i 's/a - b/a + b/' src/math.mjs && echo edited >> stamp.txt && sed -i '1s/^/x/' stamp.txt",
};
