import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveContainerEngine } from "../../batch-runner/runtime/container-engine.ts";
import { buildImage } from "../../batch-runner/runtime/image-build.ts";
import { RuntimeSpecRefused } from "../../batch-runner/runtime/runtime-spec-refused.ts";
import { podmanLane } from "../support/podman.ts";

/*
 * Issue 49 item 1: a downloaded Harbor task's Dockerfile read and wrote host files while the runner
 * built its image. A stage runs `ln -s / /hostroot`; a later RUN bind-mounts that link from the
 * stage, and podman 4.3.1 / buildah 1.28 (Debian 12, what CI installs) resolve it on the host
 * (CVE-2024-1753): a first, uncached build wrote a file on the host as root and copied a host
 * secret into the image. Here the runner's own build (image-build.ts, what `polar run
 * --docker-bin podman` calls for a `build:` task) gets that Dockerfile, with a nonce so no cache
 * answers, and must refuse it by line before podman runs, leaving the host file unwritten.
 * Without the check this test fails: podman builds it and the marker appears (checked).
 */
const lane = await podmanLane();
if (!lane.ok) console.warn(`build-host-escape: skipped: ${lane.reason}`);

describe.skipIf(!lane.ok)("a task's Dockerfile cannot reach the host through the build (podman)", () => {
  let root: string;
  /** Images this file made (and any a regression built): removed at the end. */
  const images: string[] = [];
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-build-escape-"));
  });
  afterAll(async () => {
    if (images.length) spawnSync("podman", ["rmi", "-f", ...images]);
    await rm(root, { recursive: true, force: true });
  });

  it("refuses a RUN bind mount of a stage's link to /, naming the line; the host file is not written", async () => {
    if (!lane.ok) return;
    const nonce = randomBytes(6).toString("hex");
    const secret = join(root, "host-secret.txt");
    const marker = join(root, `written-by-build-${nonce}.txt`);
    await writeFile(secret, `HOST-SECRET-${nonce}\n`);
    const context = join(root, "collection", "escape", "environment");
    await mkdir(context, { recursive: true });
    await writeFile(
      join(context, "Dockerfile"),
      [
        "FROM debian:bookworm-slim AS link",
        // The nonce keeps both stages out of the build cache: only a first build escapes.
        `RUN ln -s / /hostroot && echo ${nonce} > /nonce`,
        "FROM debian:bookworm-slim",
        `RUN --mount=type=bind,from=link,source=/hostroot,target=/h,rw cat /h${secret} > /stolen.txt; echo ${nonce} > /h${marker}; true`,
        "RUN cat /stolen.txt",
        "",
      ].join("\n"),
    );
    const engine = await resolveContainerEngine("podman");
    const opts = {
      baseImages: { "debian:bookworm-slim": lane.image },
      buildDirs: [root],
      timeoutMs: 120_000,
    };
    const err = await buildImage(engine, context, opts).then(
      (built) => new Error(`built ${built.ref}`),
      (e: Error) => e,
    );
    const written = await readFile(marker, "utf8").catch(() => null);
    // A regression built it: its image goes (afterAll), so a rerun builds (and escapes) again.
    if (!(err instanceof RuntimeSpecRefused)) images.push(err.message.replace(/^built /, ""));
    expect(written, "the build wrote a host file").toBeNull();
    expect(err).toBeInstanceOf(RuntimeSpecRefused);
    expect(err.message).toMatch(
      /environment\/Dockerfile: the runner does not build this Dockerfile, nothing was built:\nline 4: RUN --mount: refused: a build mount can reach host paths .*CVE-2024-1753/,
    );
  }, 120_000);
  it("refuses a base image whose ONBUILD trigger mounts a link to / (the Dockerfile itself holds only FROM)", async () => {
    if (!lane.ok) return;
    const nonce = randomBytes(6).toString("hex");
    const marker = join(root, `written-by-trigger-${nonce}.txt`);
    // What a task's author would publish: an image holding the link, and a base whose trigger mounts it.
    const link = `localhost/polar-escape-link:${nonce}`;
    const base = `localhost/polar-escape-base:${nonce}`;
    images.push(link, base);
    const made = (tag: string, text: string, format: string[] = []) => {
      const dir = join(root, tag.replace(/\W/g, "-"));
      spawnSync("mkdir", ["-p", dir]);
      spawnSync("sh", ["-c", `cat > ${dir}/Dockerfile`], { input: text });
      const res = spawnSync(
        lane.cli[0] as string,
        // No cache: its lookup reads layers that another file's `rmi` may be removing
        // ("getting top layer info: layer not known", seen in CI); these images are new anyway.
        [...lane.cli.slice(1), "build", "--no-cache", ...format, "-t", tag, dir],
        {
          encoding: "utf8",
          timeout: 120_000,
        },
      );
      expect(res.status, res.stderr).toBe(0);
    };
    made(link, `FROM ${lane.image}\nRUN ln -s / /hostroot && echo ${nonce} > /nonce\n`);
    made(
      base,
      `FROM ${lane.image}\nONBUILD RUN --mount=type=bind,from=${link},source=/hostroot,target=/h,rw echo ${nonce} > /h${marker}; true\n`,
      ["--format", "docker"],
    );
    const context = join(root, "collection", "trigger", "environment");
    await mkdir(context, { recursive: true });
    await writeFile(join(context, "Dockerfile"), `FROM ${base}\nRUN echo ${nonce} > /built\n`);
    const engine = await resolveContainerEngine("podman");
    const err = await buildImage(engine, context, {
      baseImages: {},
      buildDirs: [root],
      timeoutMs: 120_000,
    }).then(
      (built) => {
        images.push(built.ref);
        return new Error(`built ${built.ref}`);
      },
      (e: Error) => e,
    );
    expect(await readFile(marker, "utf8").catch(() => null), "the build wrote a host file").toBeNull();
    expect(err).toBeInstanceOf(RuntimeSpecRefused);
    expect(err.message).toMatch(
      new RegExp(
        `line 1: FROM ${base}: the image's ONBUILD triggers run in this build, and the runner does not build them, nothing was built:\nONBUILD RUN --mount=type=bind,from=${link}.*: RUN --mount: refused`,
      ),
    );
  }, 120_000);
  it("still builds what the rules allow: a base with a harmless trigger, a later FROM naming a stage called like the base", async () => {
    if (!lane.ok) return;
    const nonce = randomBytes(6).toString("hex");
    const base = `polar-escape-ok-${nonce}`;
    images.push(`localhost/${base}:latest`);
    const dir = join(root, base);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "Dockerfile"), `FROM ${lane.image}\nONBUILD RUN echo ${nonce} > /trigger\n`);
    const made = spawnSync(
      lane.cli[0] as string,
      [...lane.cli.slice(1), "build", "--format", "docker", "-t", base, dir],
      {
        encoding: "utf8",
        timeout: 120_000,
      },
    );
    expect(made.status, made.stderr).toBe(0);
    const context = join(root, "collection", "ok", "environment");
    await mkdir(context, { recursive: true });
    // The runner pins line 1's FROM to the id it read; line 3's FROM is the stage, not the image.
    await writeFile(
      join(context, "Dockerfile"),
      `FROM ${base} AS ${base}\nRUN echo stage > /stage\nFROM ${base}\nRUN cat /trigger /stage > /both\n`,
    );
    const engine = await resolveContainerEngine("podman");
    const built = await buildImage(engine, context, {
      baseImages: {},
      buildDirs: [root],
      timeoutMs: 120_000,
    });
    images.push(built.ref);
    const both = spawnSync(
      "podman",
      [...engine.globalFlags, "run", "--rm", ...engine.runFlags, built.ref, "cat", "/both"],
      {
        encoding: "utf8",
      },
    );
    expect(both.stdout).toBe(`${nonce}\nstage\n`);
  }, 120_000);
});
