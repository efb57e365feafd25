import { dockerfileInstructions, dockerfileRefusals } from "../runtime/dockerfile-policy.ts";
import { HarborTaskRefused } from "./harbor-refusal.ts";

/**
 * What Polar takes from a Harbor task's `environment/Dockerfile`. Built (the default, as Harbor
 * does: image-build.ts builds it with the runner's container engine), it must hold only what
 * runtime/dockerfile-policy.ts lets a build use (no build mounts, no remote ADD, no heredocs...;
 * refused here at import and again by the runner before it builds), and only the final stage's
 * `FROM` and `WORKDIR` are read here: the WORKDIR is the image path the agent's work dir stands in for. Not built (`import-harbor --no-build`: the
 * task runs in the runner's own runtime), only a Dockerfile that changes nothing a build would make
 * is accepted: `FROM` (recorded, not pulled), `WORKDIR`, `ENV` (into runtime.env), `LABEL`, `ARG`
 * and comments; any other instruction is refused naming its line.
 */
export interface DockerfileFacts {
  from: string | null;
  workdir: string | null;
  env: Record<string, string>;
  /** Every FROM's image (stage names left out): what `--base-image` may map to a local image. */
  bases: string[];
}

const KEPT = new Set(["FROM", "WORKDIR", "ENV", "LABEL", "ARG"]);

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

function checkedWorkdir(args: string, where: string): string {
  const dir = unquote(args).replace(/\/+$/, "");
  if (!dir.startsWith("/") || dir.includes("$")) {
    throw new HarborTaskRefused(
      `${where}: WORKDIR ${args}: only an absolute path without variables is supported`,
    );
  }
  if (dir === "")
    throw new HarborTaskRefused(`${where}: WORKDIR /: the work dir cannot stand in for the root`);
  return dir;
}

/** `FROM [--platform=x] image [AS name]` -> image and stage name. */
function fromArgs(args: string): { image: string; name: string | null } {
  const words = args.split(/\s+/).filter((w) => !w.startsWith("--"));
  const as = words.findIndex((w) => w.toUpperCase() === "AS");
  return { image: words[0] ?? "", name: as > 0 ? (words[as + 1] ?? null) : null };
}

export function readDockerfile(
  text: string,
  file = "environment/Dockerfile",
  opts: { build?: boolean; builtByRunner?: boolean } = {},
): DockerfileFacts {
  if (opts.builtByRunner) {
    const refusals = dockerfileRefusals(text);
    if (refusals.length)
      throw new HarborTaskRefused(
        `${file}: the runner would not build this Dockerfile:\n${refusals.map((r) => `${file} ${r}`).join("\n")}`,
      );
  }
  const facts: DockerfileFacts = { from: null, workdir: null, env: {}, bases: [] };
  /** Stage name -> its WORKDIR, so `FROM stage` inherits it. */
  const stageWorkdirs = new Map<string, string | null>();
  let stage: string | null = null;
  let stages = 0;
  for (const { line, keyword, args } of dockerfileInstructions(text)) {
    const where = `${file}:${line}`;
    if (!opts.build && !KEPT.has(keyword)) {
      throw new HarborTaskRefused(
        `${where}: ${keyword} needs an image built from this Dockerfile, and --no-build builds none (the task would run in the runner's own runtime without it); only FROM, WORKDIR, ENV, LABEL and ARG are accepted`,
      );
    }
    if (keyword === "FROM") {
      if (++stages > 1 && !opts.build)
        throw new HarborTaskRefused(`${where}: a multi-stage build needs the built image`);
      if (stage !== null) stageWorkdirs.set(stage, facts.workdir);
      const { image, name } = fromArgs(args);
      stage = name;
      if (stageWorkdirs.has(image)) facts.workdir = stageWorkdirs.get(image) ?? null;
      else {
        facts.workdir = null;
        if (!facts.bases.includes(image)) facts.bases.push(image);
      }
      facts.from = image;
      facts.env = {};
    } else if (keyword === "WORKDIR") {
      // A relative WORKDIR or one with variables is the builder's to resolve; Polar needs the path.
      facts.workdir = checkedWorkdir(args, where);
    } else if (keyword === "ENV" && !opts.build) {
      for (const [k, v] of envPairs(args, where)) facts.env[k] = v;
    }
  }
  return facts;
}
