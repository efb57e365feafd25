import type { ContainerEngine } from "./container-engine.ts";
import { engineEnv } from "./container-engine.ts";
import { baseImagesOf, onbuildRefusals } from "./dockerfile-policy.ts";
import type { ExecResult } from "./runtime.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";
import { spawnGroup } from "./spawn-group.ts";

/**
 * A base image's ONBUILD triggers run in a build FROM it, as if written after the FROM: a task
 * that names an image it published can carry a `RUN --mount` the Dockerfile check never sees
 * (podman 4.3 runs them, checked). So each base is on the node before the build (pulled if need
 * be), its triggers are read and held to the Dockerfile's rules, and on podman the FROM is
 * rewritten to the image id that was read, so the build uses the image checked and not whatever
 * the tag names by then.
 *
 * Podman's `image inspect` shows no triggers (its config is the OCI one); buildah, which shares its
 * storage and is the code podman builds with, shows the Docker config they live in. Without
 * buildah on the node the runner cannot read them and refuses to build on podman.
 */
export type EngineRun = (args: string[], timeoutMs?: number) => Promise<ExecResult>;

const ID = /^(?:sha256:)?([0-9a-f]{64})$/;

function tail(res: ExecResult): string {
  return `${res.stdout}\n${res.stderr}`.trim().split("\n").slice(-10).join("\n");
}

async function imageId(
  engine: ContainerEngine,
  run: EngineRun,
  ref: string,
  timeoutMs: number,
): Promise<string> {
  const inspect = () => run(["image", "inspect", "--format", "{{.Id}}", ref]);
  let res = await inspect();
  if (res.exitCode !== 0) {
    const pull = await run(["pull", ref], timeoutMs);
    if (pull.exitCode !== 0 || pull.timedOut)
      throw new RuntimeSpecRefused(
        `the base image ${ref} is not on this node and ${engine.bin} pull failed (the runner reads a base image before it builds FROM it):\n${tail(pull)}`,
      );
    res = await inspect();
  }
  const id = ID.exec(res.stdout.trim())?.[1];
  if (res.exitCode !== 0 || !id)
    throw new RuntimeSpecRefused(`the base image ${ref}: ${engine.bin} image inspect gave no id`);
  return id;
}

async function triggersOf(
  engine: ContainerEngine,
  run: EngineRun,
  id: string,
  ref: string,
): Promise<unknown> {
  if (engine.kind === "docker") {
    const res = await run(["image", "inspect", "--format", "{{json .Config.OnBuild}}", id]);
    if (res.exitCode !== 0)
      throw new RuntimeSpecRefused(
        `the base image ${ref}: its ONBUILD triggers could not be read:\n${tail(res)}`,
      );
    return parsed(res.stdout.trim() || "null", ref, res.stderr);
  }
  const res = await spawnGroup(["buildah", "inspect", "--type", "image", id], {
    env: engineEnv(),
    cwd: "/",
    timeoutMs: 60_000,
  });
  if (res.exitCode !== 0)
    throw new RuntimeSpecRefused(
      `the base image ${ref}: podman shows no image's ONBUILD triggers (which run in this build) and buildah, which does, ${res.exitCode === 127 || /ENOENT|not found/i.test(res.stderr) ? "is not installed" : `failed:\n${tail(res)}`}; install buildah beside podman (apt-get install buildah), or build with docker`,
    );
  return (
    (parsed(res.stdout, ref, res.stderr) as { Docker?: { config?: { OnBuild?: unknown } } }).Docker?.config
      ?.OnBuild ?? null
  );
}

function parsed(text: string, ref: string, stderr = ""): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    // What was read goes in the message: the one time this was seen (14 test files at once on 2 cores,
    // buildah exit 0) the error said only "not JSON", and 150 reads beside builds did not repeat it.
    const shown = `${text.slice(0, 300)}${text.length > 300 ? "..." : ""}\n${stderr.trim().split("\n").slice(-5).join("\n")}`;
    throw new RuntimeSpecRefused(
      `the base image ${ref}: its ONBUILD triggers could not be read (not JSON: ${(err as Error).message}):\n${shown.trim()}`,
    );
  }
}

/** `dockerfile` with each base checked (and on podman pinned to its id); refuses a base whose triggers the rules refuse. */
export async function checkedBases(
  engine: ContainerEngine,
  run: EngineRun,
  dockerfile: string,
  name: string,
  timeoutMs: number,
): Promise<string> {
  const ids = new Map<string, string>();
  const bases = baseImagesOf(dockerfile);
  for (const { line, image } of bases) {
    if (ids.has(image)) continue;
    const id = await imageId(engine, run, image, timeoutMs);
    const triggers = await triggersOf(engine, run, id, image);
    const list = Array.isArray(triggers) ? triggers.map(String) : [];
    if (triggers !== null && !Array.isArray(triggers))
      throw new RuntimeSpecRefused(`the base image ${image}: its ONBUILD triggers are not a list`);
    const refusals = onbuildRefusals(list);
    if (refusals.length)
      throw new RuntimeSpecRefused(
        `${name}: line ${line}: FROM ${image}: the image's ONBUILD triggers run in this build, and the runner does not build them, nothing was built:\n${refusals.join("\n")}`,
      );
    ids.set(image, id);
  }
  if (engine.kind !== "podman") return dockerfile;
  // Only the FROM lines that name an image: a later `FROM x` naming a stage called x stays.
  const lines = dockerfile.split("\n");
  for (const { line, image } of bases)
    lines[line - 1] = (lines[line - 1] as string).replace(
      /^(\s*FROM\s+(?:--\S+\s+)*)(\S+)/i,
      (all, head: string, named: string) => (named === image ? `${head}${ids.get(image)}` : all),
    );
  const pinned = lines.join("\n");
  for (const { line, image } of baseImagesOf(pinned))
    if (!ID.test(image))
      throw new RuntimeSpecRefused(
        `${name}: line ${line}: FROM ${image}: write FROM and its image on one line (the runner pins the image it checked)`,
      );
  return pinned;
}
