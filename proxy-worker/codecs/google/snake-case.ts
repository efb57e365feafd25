import { z } from "zod";

/**
 * The Gemini REST API accepts snake_case as well as camelCase field names (proto JSON mapping).
 * Renaming is shallow and applied only to structural objects: keys inside `args`, `response` and
 * JSON schemas belong to the client and must stay exactly as written.
 */
function toCamel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, char: string) => char.toUpperCase());
}

export function camelizeKeys(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    // A JSON `__proto__` key would replace the copy's prototype instead of becoming a field.
    if (key === "__proto__") continue;
    const camel = key.includes("_") ? toCamel(key) : key;
    // When both spellings are present, the camelCase one (the canonical JSON name) wins.
    if (camel !== key && camel in (value as Record<string, unknown>)) continue;
    out[camel] = field;
  }
  return out;
}

/** Wraps an object schema so it also accepts the snake_case spelling of its own keys. */
export function eitherCase<T extends z.ZodType>(schema: T) {
  return z.preprocess(camelizeKeys, schema);
}
