/**
 * Gemini schemas (`parameters`, `responseSchema`, and in practice `responseJsonSchema` too: Gemini CLI
 * writes its routing schema with the SDK's `Type.OBJECT`) use upper-case OpenAPI type names and
 * `nullable`. Engines validate JSON Schema for guided decoding, so those become lower-case types and
 * `["t","null"]`. Property names are never touched: only `type` values that are Gemini type names.
 */
const GEMINI_TYPES = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"]);

const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions"]);
const SCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SCHEMA_VALUES = new Set(["items", "additionalProperties", "not", "if", "then", "else"]);

export function toJsonSchema(schema: unknown): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (key === "type" && typeof value === "string") {
      out.type = GEMINI_TYPES.has(value) ? value.toLowerCase() : value;
    } else if (key === "type" && Array.isArray(value)) {
      out.type = value.map((t) => (typeof t === "string" && GEMINI_TYPES.has(t) ? t.toLowerCase() : t));
    } else if (SCHEMA_MAPS.has(key) && value && typeof value === "object" && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, toJsonSchema(sub)]));
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map(toJsonSchema);
    } else if (SCHEMA_VALUES.has(key)) {
      out[key] = toJsonSchema(value);
    } else if (key === "nullable") {
      // folded into `type` below
    } else {
      out[key] = value;
    }
  }
  const record = schema as Record<string, unknown>;
  if (record.nullable === true && typeof out.type === "string" && out.type !== "null") {
    out.type = [out.type, "null"];
  }
  return out;
}
