import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apptainerRuntimeFactory } from "../../batch-runner/runtime/apptainer.ts";
import { bwrapRuntimeFactory } from "../../batch-runner/runtime/bwrap.ts";
import type { ContainerEngine } from "../../batch-runner/runtime/container-engine.ts";
import { dockerRunArgs } from "../../batch-runner/runtime/docker.ts";
import { buildImage, buildOptionsFromEnv, mapBaseImages } from "../../batch-runner/runtime/image-build.ts";
import { RuntimeSpecRefused } from "../../batch-runner/runtime/runtime-spec-refused.ts";
import type { SessionDirs } from "../../batch-runner/runtime/work-dirs.ts";

/** No engine runs here: every refusal below comes before the first engine command. */
const engine: ContainerEngine = { bin: "/nonexistent/podman", kind: "podman", globalFlags: [], runFlags: [] };

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-image-build-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("building a task's image", () => {
  it("maps each FROM the operator names to a local image, keeping stages and flags", () => {
    const text =
      "FROM ubuntu:24.04 AS base\nRUN x\nfrom --platform=linux/amd64 ubuntu:24.04\nFROM base\nFROM other:1\n";
    expect(mapBaseImages(text, { "ubuntu:24.04": "localhost/ub:1" })).toBe(
      "FROM localhost/ub:1 AS base\nRUN x\nfrom --platform=linux/amd64 localhost/ub:1\nFROM base\nFROM other:1\n",
    );
  });

  it("reads the operator's settings from POLAR_BASE_IMAGES and POLAR_BUILD_DIRS, strictly", () => {
    expect(
      buildOptionsFromEnv({
        POLAR_BASE_IMAGES: "a:1=localhost/x:2, b=c",
        POLAR_BUILD_DIRS: "/srv/tasks:/data",
      }),
    ).toMatchObject({ baseImages: { "a:1": "localhost/x:2", b: "c" }, buildDirs: ["/srv/tasks", "/data"] });
    expect(buildOptionsFromEnv({}).buildDirs).toEqual([process.cwd()]);
    expect(() => buildOptionsFromEnv({ POLAR_BASE_IMAGES: "ubuntu" })).toThrow(/not FROM=LOCAL_IMAGE/);
    expect(() => buildOptionsFromEnv({ POLAR_BUILD_DIRS: "rel/dir" })).toThrow(/not an absolute path/);
  });

  it("refuses a context outside the build dirs (a link out included), or without a Dockerfile", async () => {
    const allowed = join(root, "allowed");
    const outside = join(root, "outside");
    await mkdir(join(allowed, "empty"), { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, "Dockerfile"), "FROM x\n");
    await symlink(outside, join(allowed, "link"));
    const opts = { baseImages: {}, buildDirs: [allowed], timeoutMs: 1000 };
    const refused = (dir: string) => buildImage(engine, dir, opts).catch((e) => e);
    for (const [dir, why] of [
      [outside, /outside the dirs this runner builds from/],
      [join(allowed, "link"), /outside the dirs this runner builds from/],
      [join(allowed, "empty"), /no Dockerfile/],
      [join(allowed, "missing"), /no such directory/],
      ["relative/dir", /not an absolute path/],
    ] as const) {
      const err = await refused(dir);
      expect(err).toBeInstanceOf(RuntimeSpecRefused);
      expect(err.message).toMatch(why);
    }
  });

  it("refuses build: and prebuilt: images by name on bwrap and apptainer, which build nothing", async () => {
    for (const image of ["build:/srv/task/environment", "prebuilt:registry.example/task:1"]) {
      const spec = { sessionId: "s", image, env: {}, limits: {}, proxyUrl: "http://x" };
      for (const factory of [bwrapRuntimeFactory({ imageDirs: ["/srv"] }), apptainerRuntimeFactory()]) {
        const err = await factory.create(spec).catch((e) => e);
        expect(err).toBeInstanceOf(RuntimeSpecRefused);
        expect(err.message).toMatch(
          /is refused for (bwrap|apptainer): only the docker backend builds an image/,
        );
      }
    }
  });

  it('runs a built image with its ENTRYPOINT and `sh -c "sleep infinity"`, as Harbor does; others with sleep', () => {
    const dirs = { root: "/s", workDir: "/s/w", homeDir: "/s/h", runDir: "/s/r" } as SessionDirs;
    const spec = { sessionId: "s", image: "img", env: {}, limits: {}, proxyUrl: "" };
    const built = dockerRunArgs({ name: "c", dirs, spec, imageEntrypoint: true });
    expect(built.slice(-4)).toEqual(["img", "sh", "-c", "sleep infinity"]);
    expect(built).not.toContain("--entrypoint");
    expect(dockerRunArgs({ name: "c", dirs, spec }).slice(-4)).toEqual([
      "--entrypoint",
      "sleep",
      "img",
      "infinity",
    ]);
  });

  it("builds again when another process's image removal raced the build's cache lookup, and only then", async () => {
    // A stand-in engine (docker's flags): the base is present with no triggers, the task's tag is
    // absent until a build succeeds, and the first `failures` builds fail as stated.
    const fake = async (name: string, failures: number, why: string) => {
      const dir = join(root, name);
      await mkdir(join(dir, "context"), { recursive: true });
      await writeFile(join(dir, "context", "Dockerfile"), "FROM base:1\nRUN true\n");
      await writeFile(
        join(dir, "engine"),
        `#!/bin/sh
echo "$*" >> ${dir}/calls
for last; do :; done
case "$1 $2 $4" in
  "image inspect {{.Id}}") case "$last" in localhost/polar-build:*) [ -f ${dir}/built ] || exit 1;; esac; echo sha256:${"a".repeat(64)};;
  "image inspect {{json .Config.OnBuild}}") echo null;;
  "image inspect {{.Config.WorkingDir}}") echo /app;;
  build*)
    n=$(($(cat ${dir}/builds 2>/dev/null || echo 0) + 1)); echo $n > ${dir}/builds
    if [ $n -le ${failures} ]; then echo "Error: ${why}" >&2; exit 125; fi
    touch ${dir}/built;;
  *) exit 2;;
esac
`,
      );
      await chmod(join(dir, "engine"), 0o755);
      const engine: ContainerEngine = {
        bin: join(dir, "engine"),
        kind: "docker",
        globalFlags: [],
        runFlags: [],
      };
      const out = await buildImage(engine, join(dir, "context"), {
        baseImages: {},
        buildDirs: [root],
        timeoutMs: 30_000,
      }).catch((e: Error) => e);
      const builds = (await readFile(join(dir, "calls"), "utf8"))
        .split("\n")
        .filter((l) => l.startsWith("build"));
      return { out, builds: builds.length };
    };
    const race =
      "checking if cached image exists from a previous build: getting top layer info: layer not known";
    const raced = await fake("raced", 2, race);
    expect(raced.builds).toBe(3);
    expect(raced.out).toMatchObject({ workdir: "/app" });
    const always = await fake("always-raced", 5, race);
    expect(always.builds).toBe(3);
    expect(always.out).toBeInstanceOf(RuntimeSpecRefused);
    expect((always.out as Error).message).toMatch(/exited 125[\s\S]*layer not known/);
    // The task's own failure is not built twice.
    const broken = await fake("broken", 1, 'building at STEP "RUN false": exit status 1');
    expect(broken.builds).toBe(1);
    expect(broken.out).toBeInstanceOf(RuntimeSpecRefused);
  });
});
