#!/usr/bin/env node
// The reward of the short-answer tasks (examples/rl/answer_tasks.py), run by the `test_on_output`
// evaluator in the session's work dir: `node answer-score.mjs letter|number EXPECTED` prints "ok" when the answer the agent's
// model gave (answer.txt) ends on EXPECTED: the last standalone letter, or the last integer.
//
// Why "the last one" and not an exact match: SmolLM2-135M-Instruct answers "What is 2 + 3?" in
// a sentence ("2 + 3 = 5.") far more often than with the bare number (0 of 96 exact, measured), so
// an exact check starts at 0 and gives GRPO no signal; the sentence's final answer counts, and
// saying it early and briefly (inside the token budget) is part of what the model can learn. A
// list of guesses earns nothing more than its last guess.
import { readFileSync } from "node:fs";

const [kind, expected] = process.argv.slice(2);
if (!["letter", "number"].includes(kind) || expected === undefined) {
  process.stderr.write("usage: node answer-score.mjs letter|number EXPECTED\n");
  process.exit(2);
}
let text = "";
try {
  text = readFileSync("answer.txt", "utf8");
} catch {
  text = "";
}
const found =
  kind === "letter"
    ? (text.match(/(?<![\p{L}\p{N}])\p{L}(?![\p{L}\p{N}])/gu) ?? []).map((c) => c.toLowerCase())
    : (text.match(/(?<![\d.])-?\d+(?![\d])/g) ?? []).map((n) => String(Number(n)));
const last = found.at(-1);
const ok = last !== undefined && last === expected.toLowerCase();
process.stdout.write(`${ok ? "ok\n" : ""}answer ${last ?? "(none)"}, expected ${expected}\n`);
