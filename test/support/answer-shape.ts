/**
 * The shape of an engine answer, for holding the dry-run policy to a real engine: keys and value
 * types, recursively, with the elements of an array merged into one shape (an empty array takes
 * any). What the model says cannot match (random weights vs a script), so text fields are typed
 * "text" whether they hold a string or null, and reasoning and content are one kind of delta.
 */
const TEXT_FIELDS = new Set(["content", "reasoning", "token", "text"]);

type Shape = string | { array: Shape | null } | { object: Record<string, Shape> } | { oneOf: Shape[] };

export function shapeOf(v: unknown, key = ""): Shape {
  if (TEXT_FIELDS.has(key) && (typeof v === "string" || v === null)) return "text";
  if (v === null) return "null";
  if (Array.isArray(v)) return { array: v.reduce<Shape | null>((acc, x) => merge(acc, shapeOf(x)), null) };
  if (typeof v === "object") {
    const object: Record<string, Shape> = {};
    for (const k of Object.keys(v as object).sort()) {
      // A delta carries reasoning or content as the model happens to write: one kind of text.
      const name = key === "delta" && k === "reasoning" ? "content" : k;
      object[name] = shapeOf((v as Record<string, unknown>)[k], name);
    }
    return { object };
  }
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "number";
  return typeof v;
}

function merge(a: Shape | null, b: Shape | null): Shape | null {
  if (a === null) return b;
  if (b === null) return a;
  if (typeof a === "object" && typeof b === "object") {
    if ("array" in a && "array" in b) return { array: merge(a.array, b.array) };
    if ("object" in a && "object" in b) {
      const object: Record<string, Shape> = {};
      for (const k of [...new Set([...Object.keys(a.object), ...Object.keys(b.object)])].sort())
        object[k] = merge(a.object[k] ?? "absent", b.object[k] ?? "absent") as Shape;
      return { object };
    }
  }
  const all = [a, b].flatMap((s) => (typeof s === "object" && "oneOf" in s ? s.oneOf : [s]));
  const unique = [...new Map(all.map((s) => [JSON.stringify(s), s])).values()];
  unique.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
  return unique.length === 1 ? unique[0] : { oneOf: unique };
}

/** Each chunk's kind, in order, with runs of the same kind collapsed: what a stream client sees. */
export function streamOutline(chunks: readonly unknown[]): string[] {
  const kinds = chunks.map(chunkKind);
  return kinds.filter((k, i) => i === 0 || k !== kinds[i - 1]);
}

function chunkKind(c: unknown): string {
  if (c === "[DONE]") return "done";
  const chunk = c as {
    choices?: { delta?: Record<string, unknown>; finish_reason?: string | null }[];
    usage?: unknown;
  };
  const choice = chunk.choices?.[0];
  if (!choice) return chunk.usage ? "usage" : "empty";
  if (choice.finish_reason) return "finish";
  const delta = choice.delta ?? {};
  const keys = Object.keys(delta)
    .filter((k) => delta[k] !== null && delta[k] !== undefined)
    .map((k) => (k === "reasoning" || k === "content" ? "text" : k));
  return `delta:${[...new Set(keys)].sort().join(",")}`;
}

/** The `data:` payloads of an SSE body, JSON-parsed, the final `[DONE]` kept as the string. */
export function sseData(text: string): unknown[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => l.slice(6))
    .map((d) => (d === "[DONE]" ? d : JSON.parse(d)));
}
