import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";

/** One relative import: `from` imports `to` (both repo-relative, `/`-separated). */
export interface ImportEdge {
  from: string;
  to: string;
  /** `import type` / `export type`: gone at run time, still a dependency of the design. */
  typeOnly: boolean;
}

const SKIP = new Set(["node_modules", ".git", ".cache", ".polar", ".wrangler", "cdk.out", "docs", "python"]);
const SOURCE = /\.(ts|mts|js|mjs)$/;
// Static imports and re-exports (across lines), dynamic import(), and side-effect imports.
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s+(type\s+)?[^'";]*?\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|^import\s+["']([^"']+)["']/gm;

/** Every source file under `root` (repo-relative), skipping dependencies, venvs and outputs. */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (SKIP.has(e.name) || e.name.startsWith(".venv")) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (SOURCE.test(e.name) && !e.name.endsWith(".d.ts")) out.push(toPosix(relative(root, path)));
    }
  };
  walk(root);
  return out.sort();
}

/** The relative imports of `files` (bare package names are not edges between our parts). */
export function importEdges(root: string, files: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of files) {
    edges.push(...importsOf(from, readFileSync(join(root, from), "utf8")));
  }
  return edges;
}

/** The relative imports in one file's text (exported so a test can feed it a made-up file). */
export function importsOf(from: string, text: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[2] ?? m[3] ?? m[4];
    if (!spec?.startsWith(".")) continue;
    edges.push({ from, to: toPosix(normalize(join(dirname(from), spec))), typeOnly: Boolean(m[1]) });
  }
  return edges;
}

/** Groups of files that import each other in a ring (Tarjan's strongly connected components). */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, []);
    next.get(e.from)?.push(e.to);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const ring: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      ring.push(w);
    } while (w !== v);
    if (ring.length > 1) cycles.push(ring.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}
