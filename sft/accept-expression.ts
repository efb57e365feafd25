/**
 * The `--accept` expression of `polar sft`: a tiny, safe language over a session's facts
 * (`reward >= 1 && status == "COMPLETED"`). Parsed into a tree and interpreted here; never handed
 * to eval/Function, so a task file or a shell history cannot run code through it.
 *
 *   expr    := or
 *   or      := and (("||" | "or") and)*
 *   and     := not (("&&" | "and") not)*
 *   not     := ("!" | "not") not | compare
 *   compare := primary (("==" | "!=" | ">=" | "<=" | ">" | "<") primary)?
 *   primary := NUMBER | STRING | true | false | null | NAME("." NAME)* | "(" expr ")"
 */

export type Value = number | string | boolean | null;

export type Node =
  | { kind: "literal"; value: Value }
  | { kind: "name"; path: string[] }
  | { kind: "not"; operand: Node }
  | { kind: "and" | "or"; left: Node; right: Node }
  | { kind: "compare"; op: CompareOp; left: Node; right: Node };

type CompareOp = "==" | "!=" | ">=" | "<=" | ">" | "<";

export class AcceptExpressionError extends Error {}

type Token =
  | { t: "num"; v: number; at: number }
  | { t: "str"; v: string; at: number }
  | { t: "name"; v: string; at: number }
  | { t: "op"; v: string; at: number };

// "=" after "==" so the longer operator wins; a lone "=" reads as equality (a common slip, not assignment).
const OPERATORS = ["&&", "||", "==", "!=", ">=", "<=", ">", "<", "!", "(", ")", ".", "="];
const WORD_OPERATORS = new Set(["and", "or", "not"]);

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/.exec(src.slice(i));
    // A leading minus is a sign only where an operand may start (the language has no subtraction).
    if (num && (c !== "-" || out.length === 0 || out[out.length - 1].t === "op")) {
      out.push({ t: "num", v: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new AcceptExpressionError(`unterminated string starting at column ${i + 1}`);
      out.push({ t: "str", v: src.slice(i + 1, end), at: i });
      i = end + 1;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (word) {
      out.push(
        WORD_OPERATORS.has(word[0]) ? { t: "op", v: word[0], at: i } : { t: "name", v: word[0], at: i },
      );
      i += word[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (!op) throw new AcceptExpressionError(`unexpected ${JSON.stringify(c)} at column ${i + 1}`);
    out.push({ t: "op", v: op === "=" ? "==" : op, at: i });
    i += op.length;
  }
  return out;
}

/**
 * Parses `src`; `knownNames` (when given) are the allowed first names of a path, so a typo
 * (`rewrad >= 1`) fails at the command line instead of rejecting every session.
 */
export function parseAcceptExpression(src: string, knownNames?: readonly string[]): Node {
  const tokens = tokenize(src);
  let pos = 0;
  const peek = () => tokens[pos];
  const isOp = (...vs: string[]) => {
    const tok = peek();
    return tok?.t === "op" && vs.includes(tok.v);
  };
  const where = () => (peek() ? `column ${peek().at + 1}` : "the end");

  function or(): Node {
    let left = and();
    while (isOp("||", "or")) {
      pos++;
      left = { kind: "or", left, right: and() };
    }
    return left;
  }
  function and(): Node {
    let left = not();
    while (isOp("&&", "and")) {
      pos++;
      left = { kind: "and", left, right: not() };
    }
    return left;
  }
  function not(): Node {
    if (isOp("!", "not")) {
      pos++;
      return { kind: "not", operand: not() };
    }
    return compare();
  }
  function compare(): Node {
    const left = primary();
    if (isOp("==", "!=", ">=", "<=", ">", "<")) {
      const op = (tokens[pos++] as { v: CompareOp }).v;
      return { kind: "compare", op, left, right: primary() };
    }
    return left;
  }
  function primary(): Node {
    const tok = peek();
    if (!tok) throw new AcceptExpressionError("expected a value at the end of the expression");
    pos++;
    if (tok.t === "num" || tok.t === "str") return { kind: "literal", value: tok.v };
    if (tok.t === "name") {
      if (tok.v === "true" || tok.v === "false") return { kind: "literal", value: tok.v === "true" };
      if (tok.v === "null") return { kind: "literal", value: null };
      if (knownNames && !knownNames.includes(tok.v)) {
        throw new AcceptExpressionError(
          `unknown name ${JSON.stringify(tok.v)} (known: ${knownNames.join(", ")})`,
        );
      }
      const path = [tok.v];
      while (isOp(".")) {
        pos++;
        const next = peek();
        if (next?.t !== "name")
          throw new AcceptExpressionError(`expected a field name after "." at ${where()}`);
        path.push(next.v);
        pos++;
      }
      return { kind: "name", path };
    }
    if (tok.v === "(") {
      const inner = or();
      if (!isOp(")")) throw new AcceptExpressionError(`expected ")" at ${where()}`);
      pos++;
      return inner;
    }
    throw new AcceptExpressionError(`unexpected ${JSON.stringify(tok.v)} at column ${tok.at + 1}`);
  }

  if (tokens.length === 0) throw new AcceptExpressionError("the expression is empty");
  const tree = or();
  if (pos < tokens.length)
    throw new AcceptExpressionError(`unexpected ${JSON.stringify(peek().v)} at ${where()}`);
  return tree;
}

/** Evaluates to a boolean. A missing field reads as null; comparing null with `<`/`>` is false. */
export function evaluateAccept(node: Node, facts: Record<string, unknown>): boolean {
  return truthy(evalNode(node, facts));
}

function evalNode(node: Node, facts: Record<string, unknown>): Value {
  switch (node.kind) {
    case "literal":
      return node.value;
    case "name":
      return lookup(facts, node.path);
    case "not":
      return !truthy(evalNode(node.operand, facts));
    case "and":
      return truthy(evalNode(node.left, facts)) && truthy(evalNode(node.right, facts));
    case "or":
      return truthy(evalNode(node.left, facts)) || truthy(evalNode(node.right, facts));
    case "compare":
      return compareValues(node.op, evalNode(node.left, facts), evalNode(node.right, facts));
  }
}

function lookup(facts: Record<string, unknown>, path: string[]): Value {
  let cur: unknown = facts;
  for (const part of path) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, part)) return null;
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined) return null;
  if (typeof cur === "number" || typeof cur === "string" || typeof cur === "boolean" || cur === null)
    return cur;
  // Objects and arrays compare by their JSON text: enough for equality, never code.
  return JSON.stringify(cur);
}

function compareValues(op: CompareOp, a: Value, b: Value): boolean {
  if (op === "==") return a === b;
  if (op === "!=") return a !== b;
  const bothNumbers = typeof a === "number" && typeof b === "number";
  const bothStrings = typeof a === "string" && typeof b === "string";
  if (!bothNumbers && !bothStrings) return false;
  const x = a as number | string;
  const y = b as number | string;
  if (op === ">=") return x >= y;
  if (op === "<=") return x <= y;
  if (op === ">") return x > y;
  return x < y;
}

function truthy(v: Value): boolean {
  return v !== null && v !== false && v !== 0 && v !== "";
}

/** Parse once, test many sessions. */
export function compileAccept(
  src: string,
  knownNames?: readonly string[],
): (facts: Record<string, unknown>) => boolean {
  const tree = parseAcceptExpression(src, knownNames);
  return (facts) => evaluateAccept(tree, facts);
}
