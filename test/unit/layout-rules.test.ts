/**
 * The dependency rules between the top-level parts (docs/architecture.md, "The parts and their
 * dependency rules"), checked on every relative import in the repository, type-only ones included.
 * A lower part never imports a higher one, parts on one level do not import each other, and no
 * files import each other in a ring.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type ImportEdge,
  importCycles,
  importEdges,
  importsOf,
  sourceFiles,
} from "../support/import-graph.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** What each part may import besides itself. Anything not listed is an arrow up or sideways. */
const MAY_IMPORT = {
  shared: [],
  "proxy-worker": ["shared"],
  "dry-run-policy": ["shared"],
  "batch-runner": ["shared"],
  inspect: ["shared", "batch-runner"],
  export: ["shared", "batch-runner", "inspect"],
  // Detection and the provider modules rebuild the answer a harness received; nothing else of the proxy.
  sft: ["shared", "batch-runner", "proxy-worker/codecs", "proxy-worker/detect.ts"],
  viewer: ["shared", "batch-runner", "inspect", "proxy-worker"],
  cli: ["shared", "proxy-worker", "dry-run-policy", "batch-runner", "inspect", "export", "sft", "viewer"],
} as const satisfies Record<string, readonly string[]>;
type Part = keyof typeof MAY_IMPORT;

/** Tools around the parts: they may import any part, and no part imports them. */
const TOOLS = ["bin", "bench", "test", "scripts", "examples", "infra"];

/**
 * Rooms of `batch-runner/`, lowest first: a room imports only rooms below it. Files directly in
 * `batch-runner/` (the runner, the error list, submission) sit on top, but for the defaults table,
 * which imports nothing and which any room may read.
 */
const RUNNER_ROOMS = [
  ["runner-defaults.ts"],
  ["queue", "shards", "runtime"],
  ["reconstruction", "harness", "harbor"],
  ["evaluation"],
  ["pipeline"],
  ["(top)"],
];

function partOf(file: string): string {
  return file.split("/")[0];
}

function runnerRoom(file: string): string {
  const parts = file.split("/");
  if (parts.length > 2) return parts[1];
  return RUNNER_ROOMS.some((level) => level.includes(parts[1])) ? parts[1] : "(top)";
}

function roomLevel(room: string): number {
  return RUNNER_ROOMS.findIndex((level) => level.includes(room));
}

/** Every import that breaks a rule, as `from -> to: why`. */
function layoutViolations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const { from, to } of edges) {
    const a = partOf(from);
    const b = partOf(to);
    if (TOOLS.includes(a)) continue;
    const say = (why: string) => out.push(`${from} -> ${to}: ${why}`);
    if (!(a in MAY_IMPORT)) {
      say(`${a}/ is not a part docs/architecture.md names`);
      continue;
    }
    if (a === b) {
      if (a === "shared" && !from.startsWith("shared/node/") && to.startsWith("shared/node/"))
        say("shared/ outside shared/node/ runs in Workers and may not import Node-only code");
      if (a === "batch-runner") {
        const [ra, rb] = [runnerRoom(from), runnerRoom(to)];
        if (roomLevel(ra) < 0) say(`batch-runner/${ra}/ is not a room in RUNNER_ROOMS`);
        else if (ra !== rb && roomLevel(rb) >= roomLevel(ra)) say(`room ${ra} may not import room ${rb}`);
      }
      continue;
    }
    const allowed: readonly string[] = MAY_IMPORT[a as Part];
    if (!allowed.some((p) => to === p || to.startsWith(`${p}/`)))
      say(`${a} may import only ${allowed.join(", ")}`);
  }
  return out;
}

describe("layout: the dependency rules of docs/architecture.md", () => {
  const files = sourceFiles(ROOT);
  const edges = importEdges(ROOT, files);

  it("reads the imports of every part", () => {
    // A regex that stopped matching would pass every rule; these are known to exist.
    for (const part of Object.keys(MAY_IMPORT))
      expect(files.some((f) => f.startsWith(`${part}/`))).toBe(true);
    expect(edges).toContainEqual({ from: "cli/main.ts", to: "cli/command.ts", typeOnly: false });
    expect(edges.filter((e) => partOf(e.from) === "cli" && partOf(e.to) === "viewer").length).toBeGreaterThan(
      0,
    );
    expect(edges.length).toBeGreaterThan(1500);
  });

  it("no part imports a higher or a sibling part, and batch-runner's rooms import only downward", () => {
    expect(layoutViolations(edges)).toEqual([]);
  });

  it("no files import each other in a ring", () => {
    expect(importCycles(edges)).toEqual([]);
  });

  it("reports an upward import, a sideways one, a room breach and a ring", () => {
    const made = [
      ...importsOf("batch-runner/runner.ts", 'import { main } from "../cli/main.ts";'),
      ...importsOf("proxy-worker/app.ts", 'const p = await import("../dry-run-policy/server.ts");'),
      ...importsOf("batch-runner/reconstruction/x.ts", 'import type { P } from "../pipeline/y.ts";'),
      ...importsOf("sft/a.ts", 'export { b } from\n  "../proxy-worker/app.ts";'),
      ...importsOf("shared/a.ts", 'import "./node/b.ts";'),
    ];
    expect(layoutViolations(made)).toEqual([
      "batch-runner/runner.ts -> cli/main.ts: batch-runner may import only shared",
      "proxy-worker/app.ts -> dry-run-policy/server.ts: proxy-worker may import only shared",
      "batch-runner/reconstruction/x.ts -> batch-runner/pipeline/y.ts: room reconstruction may not import room pipeline",
      "sft/a.ts -> proxy-worker/app.ts: sft may import only shared, batch-runner, proxy-worker/codecs, proxy-worker/detect.ts",
      "shared/a.ts -> shared/node/b.ts: shared/ outside shared/node/ runs in Workers and may not import Node-only code",
    ]);
    const ring = [
      ...importsOf("batch-runner/harness/a.ts", 'import { b } from "./b.ts";'),
      ...importsOf("batch-runner/harness/b.ts", 'import type { a } from "./a.ts";'),
    ];
    expect(importCycles(ring)).toEqual([["batch-runner/harness/a.ts", "batch-runner/harness/b.ts"]]);
  });
});
