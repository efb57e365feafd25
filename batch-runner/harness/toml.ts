/*
 * The small TOML subset Codex's config.toml needs: nested tables of strings, numbers, booleans
 * and arrays of those. Written by hand because the config is generated, never parsed back.
 */

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function key(name: string): string {
  return BARE_KEY.test(name) ? name : JSON.stringify(name);
}

function scalar(value: unknown, path: string): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return `[${value.map((v, i) => scalar(v, `${path}[${i}]`)).join(", ")}]`;
  if (isTable(value)) {
    const fields = Object.entries(value).map(([k, v]) => `${key(k)} = ${scalar(v, `${path}.${k}`)}`);
    return `{ ${fields.join(", ")} }`;
  }
  throw new Error(`config value at ${path} cannot be written as TOML: ${JSON.stringify(value)}`);
}

function writeTable(lines: string[], table: Record<string, unknown>, path: string[]): void {
  const scalars: string[] = [];
  const subTables: [string, Record<string, unknown>][] = [];
  for (const [name, value] of Object.entries(table)) {
    if (value === null || value === undefined) continue;
    if (isTable(value)) subTables.push([name, value]);
    else scalars.push(`${key(name)} = ${scalar(value, [...path, name].join("."))}`);
  }
  // A table holding only sub-tables needs no header of its own: `[a.b]` defines `a`.
  if (path.length > 0 && (scalars.length > 0 || subTables.length === 0)) {
    lines.push("", `[${path.map(key).join(".")}]`);
  }
  lines.push(...scalars);
  for (const [name, value] of subTables) writeTable(lines, value, [...path, name]);
}

/** Top-level scalars first, then one `[a.b]` section per nested table. null values are omitted. */
export function toToml(doc: Record<string, unknown>): string {
  const lines: string[] = [];
  writeTable(lines, doc, []);
  return `${lines.join("\n").trimStart()}\n`;
}
