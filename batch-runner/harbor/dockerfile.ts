import { HarborTaskRefused } from "./harbor-refusal.ts";

/**
 * What Polar takes from a Harbor task's `environment/Dockerfile`. No image is built: the task runs
 * in the runner's own runtime (bwrap over the host's system dirs by default, or the task's
 * `runtime.image`), so only a Dockerfile that changes nothing a build would make is accepted:
 * `FROM` (recorded, not pulled), `WORKDIR` (the image path the work dir stands in for), `ENV`
 * (into runtime.env), `LABEL`, `ARG` and comments. Any other instruction (RUN, COPY, ADD, USER, ...)
 * needs the built image, and the task is refused naming its line.
 */
export interface DockerfileFacts {
  from: string | null;
  workdir: string | null;
  env: Record<string, string>;
}

const KEPT = new Set(["FROM", "WORKDIR", "ENV", "LABEL", "ARG"]);

/** Instructions with their first line number; continuation lines (`\`) joined, comments dropped. */
function instructions(text: string): { line: number; keyword: string; args: string }[] {
  const out: { line: number; keyword: string; args: string }[] = [];
  let pending: { line: number; text: string } | null = null;
  text.split(/\r?\n/).forEach((raw, i) => {
    const trimmed = raw.trim();
    if (pending === null && (trimmed === "" || trimmed.startsWith("#"))) return;
    if (pending !== null && trimmed.startsWith("#")) return;
    const part = trimmed.endsWith("\\") ? trimmed.slice(0, -1) : trimmed;
    pending = pending ? { line: pending.line, text: `${pending.text} ${part}` } : { line: i + 1, text: part };
    if (trimmed.endsWith("\\")) return;
    const m = /^(\S+)\s*(.*)$/.exec(pending.text) as RegExpExecArray;
    out.push({ line: pending.line, keyword: m[1].toUpperCase(), args: m[2].trim() });
    pending = null;
  });
  if (pending !== null) {
    const p = pending as { line: number; text: string };
    const m = /^(\S+)\s*(.*)$/.exec(p.text) as RegExpExecArray;
    out.push({ line: p.line, keyword: m[1].toUpperCase(), args: m[2].trim() });
  }
  return out;
}

function unquote(v: string): string {
  return /^"(.*)"$/.test(v) || /^'(.*)'$/.test(v) ? v.slice(1, -1) : v;
}

/** `ENV A=1 B="x y"` or the legacy `ENV A 1`. */
function envPairs(args: string, where: string): [string, string][] {
  if (!(args.split(/\s+/)[0] ?? "").includes("=")) {
    const m = /^(\S+)\s+(.*)$/.exec(args);
    if (!m) throw new HarborTaskRefused(`${where}: ENV ${args}: expected NAME=VALUE`);
    return [[m[1], m[2]]];
  }
  const pairs: [string, string][] = [];
  for (const m of args.matchAll(/(\S+?)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) pairs.push([m[1], unquote(m[2])]);
  return pairs;
}

export function readDockerfile(text: string, file = "environment/Dockerfile"): DockerfileFacts {
  const facts: DockerfileFacts = { from: null, workdir: null, env: {} };
  let stages = 0;
  for (const { line, keyword, args } of instructions(text)) {
    const where = `${file}:${line}`;
    if (!KEPT.has(keyword)) {
      throw new HarborTaskRefused(
        `${where}: ${keyword} needs an image built from this Dockerfile, and import-harbor builds none (the task would run in the runner's own runtime without it); only FROM, WORKDIR, ENV, LABEL and ARG are accepted`,
      );
    }
    if (keyword === "FROM") {
      if (++stages > 1) throw new HarborTaskRefused(`${where}: a multi-stage build needs the built image`);
      facts.from = args;
    } else if (keyword === "WORKDIR") {
      const dir = unquote(args).replace(/\/+$/, "");
      if (!dir.startsWith("/") || dir.includes("$")) {
        throw new HarborTaskRefused(
          `${where}: WORKDIR ${args}: only an absolute path without variables is supported`,
        );
      }
      if (dir === "")
        throw new HarborTaskRefused(`${where}: WORKDIR /: the work dir cannot stand in for the root`);
      facts.workdir = dir;
    } else if (keyword === "ENV") {
      for (const [k, v] of envPairs(args, where)) facts.env[k] = v;
    }
  }
  return facts;
}
