import { describe, expect, it } from "vitest";
import { AcceptExpressionError, compileAccept, parseAcceptExpression } from "../../sft/accept-expression.ts";

const facts = {
  reward: 1,
  status: "COMPLETED",
  traces: 2,
  task_id: "fix-bug",
  metadata: { resolved: true, score: 0.5 },
};
const accept = (src: string, f: Record<string, unknown> = facts) => compileAccept(src)(f);

describe("accept expression", () => {
  it("compares numbers and strings", () => {
    expect(accept("reward >= 1")).toBe(true);
    expect(accept("reward > 1")).toBe(false);
    expect(accept("reward >= 1", { ...facts, reward: 0 })).toBe(false);
    expect(accept('status == "COMPLETED"')).toBe(true);
    expect(accept("status != 'COMPLETED'")).toBe(false);
    expect(accept("reward = 1")).toBe(true);
    expect(accept("reward >= -0.5")).toBe(true);
  });

  it("combines with && || ! and words, with precedence and parentheses", () => {
    expect(accept('reward >= 1 && status == "COMPLETED"')).toBe(true);
    expect(accept('reward >= 1 && status == "ERROR"')).toBe(false);
    expect(accept('reward < 1 || status == "COMPLETED"')).toBe(true);
    expect(accept("!(reward >= 1)")).toBe(false);
    expect(accept("not reward < 1 and traces > 1")).toBe(true);
    // && binds tighter than ||: false || (true && true)
    expect(accept("reward > 5 || traces == 2 && reward == 1")).toBe(true);
    expect(accept("(reward > 5 || traces == 2) && reward == 0")).toBe(false);
  });

  it("reads nested fields; a missing field is null and never passes an ordering test", () => {
    expect(accept("metadata.resolved == true")).toBe(true);
    expect(accept("metadata.score >= 0.5")).toBe(true);
    expect(accept("metadata.nope >= 0")).toBe(false);
    expect(accept("metadata.nope == null")).toBe(true);
    expect(accept("reward >= 1", { status: "ERROR", reward: null })).toBe(false);
  });

  it("rejects bad syntax with the column, and unknown names when a list is given", () => {
    expect(() => parseAcceptExpression("reward >=")).toThrow(AcceptExpressionError);
    expect(() => parseAcceptExpression("reward >= 1 )")).toThrow(/column 13/);
    expect(() => parseAcceptExpression("(reward >= 1")).toThrow(/expected "\)"/);
    expect(() => parseAcceptExpression("'open")).toThrow(/unterminated/);
    expect(() => parseAcceptExpression("")).toThrow(/empty/);
    expect(() => parseAcceptExpression("rewrad >= 1", ["reward", "status"])).toThrow(/unknown name "rewrad"/);
  });

  it("cannot run code: calls, property tricks and operators outside the grammar are syntax errors", () => {
    for (const src of [
      "process.exit(1)",
      "reward; 1",
      "constructor.constructor('x')()",
      "reward + 1 > 0",
      "`x`",
      "a[0]",
    ]) {
      expect(() => parseAcceptExpression(src), src).toThrow(AcceptExpressionError);
    }
    // Own fields only: prototype names read as missing.
    expect(accept("toString == null")).toBe(true);
    expect(accept("metadata.constructor == null")).toBe(true);
  });
});
