/**
 * Cross-field string sharing for stored records. A capture holds the client's request and the
 * Chat Completions request made from it; both carry the same long strings (system prompt, tool
 * results, file contents). A request is often larger than gzip's 32 KB window, so gzip cannot
 * see the repeat: here each long string of `target` that also occurs in `source` becomes a
 * reference to it, which roughly halves a stored capture.
 *
 * In the packed value, a string starting with U+0000 is special:
 *   "\u0000#N"        the N-th distinct long string of `source`, in JSON serialization order;
 *   "\u0000" + s      the literal s (escape for real strings that start with U+0000).
 * Any other string is itself. Values must be JSON data (they are stored as JSON anyway).
 */

export const STRING_REFS_ENCODING = "strref.v1";
/** Shorter strings are not worth a reference (a reference costs ~10 bytes of JSON). */
export const MIN_SHARED_LENGTH = 64;

const MARK = "\u0000";
const REF = "\u0000#";

/** Replaces the long strings of `target` that occur in `source` by references. */
export function shareStrings(source: unknown, target: unknown): unknown {
  const index = new Map<string, number>();
  for (const s of longStrings(source)) if (!index.has(s)) index.set(s, index.size);
  return mapStrings(toJsonData(target), (s) => {
    if (s.length >= MIN_SHARED_LENGTH) {
      const n = index.get(s);
      if (n !== undefined) return REF + n;
    }
    return s.startsWith(MARK) ? MARK + s : s;
  });
}

/** Inverse of `shareStrings`, given the same `source` (as parsed back from JSON). */
export function restoreStrings(source: unknown, packed: unknown): unknown {
  const table: string[] = [];
  const seen = new Set<string>();
  for (const s of longStrings(source)) {
    if (!seen.has(s)) {
      seen.add(s);
      table.push(s);
    }
  }
  return mapStrings(packed, (s) => {
    if (!s.startsWith(MARK)) return s;
    if (!s.startsWith(REF)) return s.slice(1);
    const n = Number(s.slice(REF.length));
    const value = Number.isInteger(n) ? table[n] : undefined;
    if (value === undefined) throw new StringRefsError(`string reference ${JSON.stringify(s)} has no target`);
    return value;
  });
}

export class StringRefsError extends Error {}

/** Long strings of a JSON value in serialization order (a replacer sees toJSON results too). */
function longStrings(value: unknown): string[] {
  const out: string[] = [];
  // The direct walk visits plain data in the order JSON.stringify does (own keys in property
  // order) at a fraction of the replacer's cost; anything else takes the replacer's word.
  if (collectLong(value, out)) return out;
  out.length = 0;
  JSON.stringify(value, (_key, v) => {
    if (typeof v === "string" && v.length >= MIN_SHARED_LENGTH) out.push(v);
    return v;
  });
  return out;
}

/** False (with `out` partly filled) when `value` is not plain JSON data. */
function collectLong(value: unknown, out: string[]): boolean {
  if (typeof value === "string") {
    if (value.length >= MIN_SHARED_LENGTH) out.push(value);
    return true;
  }
  if (value === null || typeof value !== "object")
    return typeof value === "number" || typeof value === "boolean";
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!collectLong(value[i], out)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) return false;
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || !collectLong(v, out)) return false;
  }
  return true;
}

function toJsonData(value: unknown): unknown {
  if (value === undefined) return undefined;
  // Only non-plain values (Dates, class instances) need the round trip to become JSON data.
  return isPlainJson(value) ? value : JSON.parse(JSON.stringify(value));
}

function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value !== "object")
    return typeof value !== "function" && typeof value !== "bigint";
  if (Array.isArray(value)) return value.every(isPlainJson);
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value).every((v) => v !== undefined && isPlainJson(v));
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === "string") return f(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = mapStrings(value[i], f);
    return out;
  }
  // A plain loop: the proxy maps a ~50 KB request on every call, and entries/fromEntries
  // allocate two arrays per object.
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const mapped = mapStrings((value as Record<string, unknown>)[key], f);
    // Assignment to "__proto__" would set the prototype; a defined property stays a key.
    if (key === "__proto__") {
      Object.defineProperty(out, key, {
        value: mapped,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else out[key] = mapped;
  }
  return out;
}
