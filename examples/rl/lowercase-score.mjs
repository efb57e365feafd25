#!/usr/bin/env node
// The reward of examples/rl_on_cpu.py, run by the `test_on_output` evaluator in the session's
// work dir: it scores answer.txt (everything the agent's model said) and prints "ok 1" .. "ok K"
// for a score of K/100, so `expected_lines` ok 1..ok 100 with `partial_credit` gives reward K/100.
//
// score = (lowercase ASCII letters / non-space characters) * min(1, letters / 16)
// The first factor is dense from random weights (a fair share of Qwen3's 151k tokens are
// lowercase word pieces, so a random answer already scores about a third) and is 1 only for an
// answer made of lowercase letters: no capitals, digits, punctuation, other scripts or special
// tokens. Spaces count neither way, so a run of spaces is worth nothing (no letters: 0); the
// second factor asks for at least 16 letters, so a near-empty answer earns nothing either.
import { readFileSync } from "node:fs";

let text = "";
try {
  text = readFileSync("answer.txt", "utf8");
} catch {
  text = "";
}
const chars = [...text].filter((c) => !/\s/u.test(c));
const letters = chars.filter((c) => c >= "a" && c <= "z").length;
const score = chars.length === 0 ? 0 : (letters / chars.length) * Math.min(1, letters / 16);
const k = Math.floor(score * 100 + 1e-9);
const lines = [];
for (let i = 1; i <= k; i++) lines.push(`ok ${i}`);
process.stdout.write(
  `${lines.join("\n")}\nscore ${score.toFixed(4)} (${letters} letters of ${chars.length} characters)\n`,
);
