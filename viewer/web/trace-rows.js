/**
 * The trace page's rows: a header per segment (message, think block, tool call, tool result),
 * then, unless the segment is folded, its tokens cut into chunks at line ends so no row is
 * large. Marker rows stand where the response starts, where the policy version changes and at
 * the first token that differs from the parent chain.
 */

const MIN_CHUNK = 48;
const MAX_CHUNK = 320;

export const FOLDABLE = new Set(["system", "tool_call", "tool_result", "think"]);

export const KIND_LABEL = {
  system: "system prompt",
  user: "user",
  assistant: "assistant",
  tool_result: "tool result",
  tool_call: "tool call",
  think: "thinking",
  other: "text",
};

/** Token positions -> marker labels, for the whole stream. */
export function markersOf(t) {
  const m = new Map();
  const add = (pos, kind, label) => {
    if (!m.has(pos)) m.set(pos, []);
    m.get(pos).push({ kind, label });
  };
  add(
    t.prompt_len,
    "response",
    `response: ${t.ids.length - t.prompt_len} tokens sampled or inserted after the prompt`,
  );
  // A version only where it is known and where it changes: reconstruction writes one span per
  // turn, null when the engine reported no version, and one constant version needs no marker.
  const known = (t.extras.version_spans ?? [])
    .map((s) => ({ s, v: versionLabel(s) }))
    .filter((x) => x.v !== null);
  const changes = known.some((x) => x.v !== known[0].v || x.s.version_start !== x.s.version_end);
  if (changes) {
    let previous = null;
    for (const { s, v } of known) {
      if (v !== previous) add(t.prompt_len + s.start, "version", `policy version ${v}`);
      previous = v;
    }
  }
  if (t.break?.position != null && t.break.position < t.prompt_len)
    add(
      t.break.position,
      "break",
      `chain break (${t.break.reason ?? "unknown"}): first token that differs from trace ${t.break.parent_trace ?? "?"}`,
    );
  return m;
}

/** "v7", "v7 → v8" for a span that crossed a weight update, null when neither end is known. */
export function versionLabel(s) {
  const a = s.version_start ?? null;
  const b = s.version_end ?? null;
  if (a === null && b === null) return null;
  if (a === null || b === null || a === b) return `${a ?? b}`;
  return `${a} → ${b}`;
}

export function buildRows(t, folded, markers) {
  const rows = [];
  t.segments.forEach((s, k) => {
    // A message's text after its tool call or thinking block reads on without a header of its own.
    const continues = k > 0 && t.segments[k - 1].message === s.message && !FOLDABLE.has(s.kind);
    if (!continues) rows.push({ key: `h${k}`, type: "head", seg: k });
    if (folded.has(k)) return;
    let from = s.start;
    const flush = (to) => {
      if (to > from) rows.push({ key: `c${from}`, type: "chunk", from, to });
      from = to;
    };
    for (let i = s.start; i < s.end; i++) {
      const marks = markers.get(i);
      if (marks && i > s.start) {
        flush(i);
      }
      if (marks) for (const mk of marks) rows.push({ key: `m${i}${mk.kind}`, type: "marker", ...mk });
      const n = i + 1 - from;
      if (n >= MAX_CHUNK || (n >= MIN_CHUNK && t.text[i].includes("\n"))) flush(i + 1);
    }
    flush(s.end);
  });
  return rows;
}

const CHAR_PX = 7.8;
const LINE_PX = 18;

/** A row's height before it is measured: wrapped lines of its text at the box's width. */
export function estimator(t, width) {
  const perLine = Math.max(20, Math.floor((width - 40) / CHAR_PX));
  const cache = new Map();
  return (row) => {
    if (row.type === "head") return 30;
    if (row.type === "marker") return 26;
    const known = cache.get(row.key);
    if (known !== undefined) return known;
    let lines = 0;
    let len = 0;
    for (let i = row.from; i < row.to; i++) {
      const parts = t.text[i].split("\n");
      len += parts[0].length;
      for (let p = 1; p < parts.length; p++) {
        lines += Math.max(1, Math.ceil(len / perLine));
        len = parts[p].length;
      }
    }
    lines += Math.max(1, Math.ceil(len / perLine));
    const height = lines * LINE_PX + 2;
    cache.set(row.key, height);
    return height;
  };
}
