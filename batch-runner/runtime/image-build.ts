import { createHash } from "node:crypto";
import { lstat, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, sep } from "node:path";
import type { ContainerEngine } from "./container-engine.ts";
import { engineEnv } from "./container-engine.ts";
import { dockerfileBytesRefusals, dockerfileRefusals } from "./dockerfile-policy.ts";
import { checkedBases } from "./image-build-bases.ts";
import { splitBuildContext } from "./image-build-ref.ts";
import type { ExecResult } from "./runtime.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";
import { spawnGroup } from "./spawn-group.ts";

/**
 * Builds a task's image from its Dockerfile and build context (`runtime.image` `build:<dir>`) with
 * the docker runtime's engine, as Harbor's docker environment does (`docker compose build` of the
 * task's `environment/`). Tagged by a hash of the context's bytes, the Dockerfile as built and the
 * ids of the local base images it maps to, so a task is built once per node: later sessions (and
 * other runners on the node) find the tag. A build that fails or runs past its time refuses the
 * session with the log's tail (the session ends ERROR at INIT).
 */
export interface BuildOptions {
  /** `FROM` image -> a local image used instead (base images may not be pullable on the node). */
  baseImages: Record<string, string>;
  /** Dirs a build context must lie in (after resolving links): what the operator lets tasks build. */
  buildDirs: string[];
  timeoutMs: number;
}

export interface BuiltImage {
  ref: string;
  /** The image's WORKDIR (null when none, or `/`): its files seed the session's work dir. */
  workdir: string | null;
}

export const IMAGE_REPOSITORY = "localhost/polar-build";
const DEFAULT_TIMEOUT_MS = 30 * 60_000;
const LOG_TAIL_LINES = 30;
/**
 * Podman's build fails so when another process removes an image while the build's cache lookup
 * reads its layers (`checking if cached image exists from a previous build: getting top layer
 * info: layer not known`): a fault of the node, not of the task, and a rerun builds.
 */
const STORAGE_RACE = /layer not known/;
const BUILD_ATTEMPTS = 3;

/** Builds in flight in this process, by tag: concurrent sessions of a task wait for one build. */
const inFlight = new Map<string, Promise<BuiltImage>>();

/** The operator's settings from the environment: `POLAR_BASE_IMAGES` `from=local,...`, `POLAR_BUILD_DIRS` `a:b`. */
export function buildOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): BuildOptions {
  const baseImages: Record<string, string> = {};
  for (const pair of (env.POLAR_BASE_IMAGES ?? "").split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0 || at === pair.length - 1)
      throw new Error(`POLAR_BASE_IMAGES: ${JSON.stringify(pair)} is not FROM=LOCAL_IMAGE`);
    baseImages[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  const dirs = (env.POLAR_BUILD_DIRS ?? "").split(":").filter((d) => d !== "");
  for (const d of dirs) if (!isAbsolute(d)) throw new Error(`POLAR_BUILD_DIRS: ${d} is not an absolute path`);
  return { baseImages, buildDirs: dirs.length ? dirs : [process.cwd()], timeoutMs: DEFAULT_TIMEOUT_MS };
}

/** The Dockerfile with each mapped `FROM` image replaced (stage names and flags kept). */
export function mapBaseImages(dockerfile: string, map: Record<string, string>): string {
  return dockerfile.replace(/^(\s*FROM\s+(?:--\S+\s+)*)(\S+)/gim, (all, head: string, image: string) =>
    Object.hasOwn(map, image) ? `${head}${map[image]}` : all,
  );
}

/** Every entry under `dir`, sorted, with its kind, exec bit and bytes (a link: its target text). */
async function hashContext(dir: string, hash: ReturnType<typeof createHash>): Promise<void> {
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(dir, rel))).sort();
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const info = await lstat(join(dir, path));
      if (info.isSymbolicLink()) hash.update(`L\0${path}\0${await readlink(join(dir, path))}\0`);
      else if (info.isDirectory()) {
        hash.update(`D\0${path}\0`);
        await walk(path);
      } else if (info.isFile()) {
        hash.update(`F\0${path}\0${info.mode & 0o111 ? "x" : "-"}\0${info.size}\0`);
        hash.update(await readFile(join(dir, path)));
      } else hash.update(`O\0${path}\0`);
    }
  };
  await walk("");
}

function tailOf(text: string): string {
  return text.trim().split("\n").slice(-LOG_TAIL_LINES).join("\n");
}

async function checkedContext(context: string, buildDirs: string[]): Promise<string> {
  if (!isAbsolute(context))
    throw new RuntimeSpecRefused(`runtime.image build:${context}: not an absolute path`);
  const real = await realpath(context).catch(() => null);
  if (real === null)
    throw new RuntimeSpecRefused(`runtime.image build:${context}: no such directory on this runner`);
  const allowed = await Promise.all(buildDirs.map((d) => realpath(d).catch(() => null)));
  if (!allowed.some((d) => d !== null && (real === d || real.startsWith(`${d}${sep}`))))
    throw new RuntimeSpecRefused(
      `runtime.image build:${context}: outside the dirs this runner builds from (POLAR_BUILD_DIRS, default its working dir)`,
    );
  const dockerfile = await lstat(join(real, "Dockerfile")).catch(() => null);
  if (!dockerfile?.isFile())
    throw new RuntimeSpecRefused(`runtime.image build:${context}: no Dockerfile (a regular file) in it`);
  return real;
}

/**
 * The Dockerfile as it will be built (bases mapped), refused whole when it holds anything that
 * could reach the host through the builder (dockerfile-policy.ts), whatever engine builds it.
 */
function checkedDockerfile(bytes: Uint8Array, name: string, baseImages: Record<string, string>): string {
  const utf8 = dockerfileBytesRefusals(bytes);
  const text = utf8.length ? "" : mapBaseImages(new TextDecoder().decode(bytes), baseImages);
  const refusals = utf8.length ? utf8 : dockerfileRefusals(text);
  if (refusals.length)
    throw new RuntimeSpecRefused(
      `${name}: the runner does not build this Dockerfile, nothing was built:\n${refusals.join("\n")}`,
    );
  return text;
}

/** A `prebuilt:` task image as it is (pulled when the node lacks it), with its WORKDIR read. */
export async function taskImage(
  engine: ContainerEngine,
  ref: string,
  timeoutMs: number,
): Promise<BuiltImage> {
  const run = (args: string[], ms = 60_000) =>
    spawnGroup([engine.bin, ...engine.globalFlags, ...args], { env: engineEnv(), cwd: "/", timeoutMs: ms });
  const inspect = () => run(["image", "inspect", "--format", "{{.Config.WorkingDir}}", ref]);
  let res = await inspect();
  if (res.exitCode !== 0) {
    const pull = await run(["pull", ref], timeoutMs);
    if (pull.exitCode !== 0 || pull.timedOut)
      throw new RuntimeSpecRefused(
        `the task image ${ref} is not on this node and ${engine.bin} pull failed:\n${tailOf(`${pull.stdout}\n${pull.stderr}`)}`,
      );
    res = await inspect();
  }
  const workdir = res.stdout.trim().replace(/\/+$/, "");
  return { ref, workdir: res.exitCode === 0 && workdir !== "" ? workdir : null };
}

/** The tag for `context` as it is now, building the image unless the engine already has it. */
export async function buildImage(
  engine: ContainerEngine,
  context: string,
  opts: BuildOptions,
): Promise<BuiltImage> {
  const cli = [engine.bin, ...engine.globalFlags];
  const run = (args: string[], timeoutMs = 60_000) =>
    spawnGroup([...cli, ...args], { env: engineEnv(), cwd: "/", timeoutMs });
  // The task's own limit (Harbor's build_timeout_sec) counts only below the runner's.
  const { dir: contextDir, timeoutMs: own } = splitBuildContext(context);
  const timeoutMs = own === null ? opts.timeoutMs : Math.min(own, opts.timeoutMs);
  const dir = await checkedContext(contextDir, opts.buildDirs);
  const name = `${contextDir}/Dockerfile`;
  const checked = checkedDockerfile(await readFile(join(dir, "Dockerfile")), name, opts.baseImages);
  const dockerfile = await checkedBases(engine, run, checked, name, timeoutMs);
  const hash = createHash("sha256").update(`${dockerfile}\0`);
  for (const local of Object.values(opts.baseImages).sort()) {
    // A mapped base rebuilt under the same name is a new input.
    const id = await run(["image", "inspect", "--format", "{{.Id}}", local]);
    hash.update(`${local}\0${id.exitCode === 0 ? id.stdout.trim() : "absent"}\0`);
  }
  await hashContext(dir, hash);
  const ref = `${IMAGE_REPOSITORY}:${hash.digest("hex").slice(0, 20)}`;
  const pending = inFlight.get(ref);
  if (pending) return pending;
  const job = (async (): Promise<BuiltImage> => {
    if ((await run(["image", "inspect", "--format", "{{.Id}}", ref])).exitCode !== 0) {
      const tmp = await mkdtemp(join(tmpdir(), "polar-build-"));
      try {
        const file = join(tmp, "Dockerfile");
        await writeFile(file, dockerfile);
        // The run flags this host needs (container-engine.ts: rlimits) apply to the build's RUN steps too.
        const ulimits = engine.runFlags.flatMap((f, i, all) =>
          f === "--ulimit" ? [f, all[i + 1] as string] : [],
        );
        const build = () => run(["build", ...ulimits, "--file", file, "--tag", ref, dir], timeoutMs);
        let res = await build();
        for (let attempt = 1; attempt < BUILD_ATTEMPTS && raced(res); attempt++) res = await build();
        if (res.exitCode !== 0 || res.timedOut) {
          const why = res.timedOut
            ? `ran past ${Math.round(timeoutMs / 1000)} s${own !== null && own <= opts.timeoutMs ? " (the task's build_timeout_sec)" : ""}`
            : `exited ${res.exitCode}`;
          throw new RuntimeSpecRefused(
            `building the image from ${contextDir}/Dockerfile failed (${engine.bin} build ${why}):\n${tailOf(`${res.stdout}\n${res.stderr}`)}`,
          );
        }
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    }
    const inspect = await run(["image", "inspect", "--format", "{{.Config.WorkingDir}}", ref]);
    const workdir = inspect.stdout.trim().replace(/\/+$/, "");
    return { ref, workdir: inspect.exitCode === 0 && workdir !== "" ? workdir : null };
  })();
  inFlight.set(ref, job);
  try {
    return await job;
  } finally {
    inFlight.delete(ref);
  }
}

function raced(res: ExecResult): boolean {
  return res.exitCode !== 0 && !res.timedOut && STORAGE_RACE.test(`${res.stdout}\n${res.stderr}`);
}

export { DEFAULT_TIMEOUT_MS };
