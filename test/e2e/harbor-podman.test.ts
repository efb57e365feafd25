import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { IMAGE_REPOSITORY } from "../../batch-runner/runtime/image-build.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { podmanLane } from "../support/podman.ts";
import { readTaskResults } from "../support/runner-stack.ts";
import { runPolar, shellScript } from "./polar-run-process.ts";

/*
 * Harbor tasks as Harbor runs them, on podman: `polar import-harbor` over the fixture collection
 * (test/fixtures/harbor-build: a Dockerfile with multi-stage COPY --from, COPY and ADD from its
 * context, RUN with ARG/ENV, USER, ENTRYPOINT/CMD, WORKDIR; task.toml's `version`; a job's
 * config.yaml beside the task), then `polar run` builds the image with podman from the local base
 * image (`POLAR_BASE_IMAGES` maps the task's FROM to the host-rootfs image of podman-image.ts) and
 * runs the pi preset in it, driven by the dry-run policy: the solved variant runs the task's
 * solution and scores 1, the idle one 0 (the solution rewrites a file of the image's WORKDIR, so the
 * agent's edit must reach the tests); prebuilt-note's `docker_image` runs with its WORKDIR's file in
 * the work dir. The image is built once for every session and judge; a
 * Dockerfile that fails to build ends its session ERROR at INIT with the build log's tail.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = join(ROOT, "test", "fixtures", "harbor-build");
/** prebuilt-note's `environment.docker_image`, built by this test from the lane's image. */
const PREBUILT = "localhost/polar-harbor-prebuilt:fixture";
const lane = await podmanLane();
if (!lane.ok) console.warn(`harbor-podman: skipped: ${lane.reason}`);

describe.skipIf(!lane.ok)("Harbor tasks built and run on podman", () => {
  let dir: string;
  let builds: string[] = [];
  let run: { code: number | null; stdout: string; stderr: string };
  const results: Record<string, SessionResult[]> = {};
  const nonce = randomBytes(6).toString("hex");

  beforeAll(async () => {
    if (!lane.ok) return;
    await installHarness(CLI_PRESETS.pi, { log: (line) => console.log(`[pi] ${line}`) });
    dir = await mkdtemp(join(tmpdir(), "polar-harbor-podman-"));
    // A copy with a fresh file in its context: a tag of its own, so this run builds it (once).
    const collection = join(dir, "collection");
    await cp(FIXTURES, collection, { recursive: true });
    await writeFile(join(collection, "word-tally", "environment", "nonce.txt"), `${nonce}\n`);
    await cp(join(collection, "word-tally"), join(collection, "broken-build"), { recursive: true });
    await writeFile(
      join(collection, "broken-build", "environment", "Dockerfile"),
      `FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo "BUILD-FAILS-${nonce}" && exit 3\n`,
    );
    // The engine as the runner calls it, each `build` logged: podman itself does the work.
    const log = join(dir, "engine.log");
    const engine = join(dir, "podman-logged");
    await writeFile(engine, `#!/bin/sh\necho "$*" >> ${log}\nexec podman "$@"\n`);
    await chmod(engine, 0o755);
    const env = {
      ...process.env,
      POLAR_BASE_IMAGES: `debian:bookworm-slim=${lane.image}`,
      POLAR_BUILD_DIRS: dir,
      POLAR_SESSIONS_DIR: join(dir, "sessions"),
    };
    // prebuilt-note's environment.docker_image, as a registry would hold it: a WORKDIR with a file.
    const prebuilt = join(dir, "prebuilt");
    await mkdir(prebuilt);
    await writeFile(
      join(prebuilt, "Dockerfile"),
      `FROM ${lane.image}\nRUN mkdir -p /srv/notes && echo "from the image" > /srv/notes/note.txt\nWORKDIR /srv/notes\n`,
    );
    const made = spawnSync(lane.cli[0] as string, [...lane.cli.slice(1), "build", "-t", PREBUILT, prebuilt], {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(made.status, made.stderr).toBe(0);
    const imported = await runPolar(["import-harbor", collection, "--harness", "pi"], env, 60_000);
    expect(imported.code, imported.stderr).toBe(0);
    const byId = Object.fromEntries(
      imported.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
        .map((t) => [t.task_id, t]),
    );
    const solution = async (task: string) =>
      (await readFile(join(FIXTURES, task, "solution", "solve.sh"), "utf8"))
        .split("\n")
        .filter((l) => l.trim() !== "" && !l.startsWith("#"));
    const { "word-tally": tally, "broken-build": broken, "prebuilt-note": note } = byId;
    const tasks = [
      {
        ...tally,
        task_id: "tally-solved",
        num_samples: 2,
        instruction: tally.instruction + shellScript(await solution("word-tally")),
      },
      { ...tally, task_id: "tally-idle", instruction: tally.instruction + shellScript([]) },
      { ...broken, instruction: broken.instruction + shellScript(await solution("word-tally")) },
      { ...note, instruction: note.instruction + shellScript(await solution("prebuilt-note")) },
    ];
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
    run = await runPolar(
      ["run", tasksFile, "--out", join(dir, "out"), "--run", "4", "--docker-bin", engine],
      env,
      300_000,
    );
    const store = new DirectoryStore(join(dir, "out", "store"));
    for (const id of ["tally-solved", "tally-idle", "broken-build", "prebuilt-note"])
      results[id] = await readTaskResults(store, id);
    builds = (await readFile(log, "utf8").catch(() => "")).split("\n").filter((l) => /(^| )build /.test(l));
  }, 420_000);

  afterAll(async () => {
    if (!lane.ok) return;
    // The images this run built (their tags are this run's): none left on the node.
    for (const line of builds) {
      const tag = /--tag (\S+)/.exec(line)?.[1];
      if (tag?.startsWith(IMAGE_REPOSITORY)) spawnSync("podman", ["rmi", "-f", tag]);
    }
    spawnSync("podman", ["rmi", "-f", PREBUILT]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("scores the solved variant 1 (both samples) and the idle one 0", () => {
    const out = `${run.stdout}\n${run.stderr}`;
    expect(results["tally-solved"], out).toHaveLength(2);
    for (const r of results["tally-solved"] ?? []) {
      expect(r.status, `${r.error}\n${out}`).toBe("COMPLETED");
      expect(r.reward, JSON.stringify(r.evaluation)).toBe(1);
    }
    const [idle] = results["tally-idle"] ?? [];
    expect(idle?.status, `${idle?.error}\n${out}`).toBe("COMPLETED");
    expect(idle?.reward).toBe(0);
  });

  it("runs environment.docker_image as Harbor does: its WORKDIR's file in the work dir, solved 1", () => {
    const [r] = results["prebuilt-note"] ?? [];
    expect(r?.status, `${r?.error}\n${run.stdout}\n${run.stderr}`).toBe("COMPLETED");
    expect(r?.reward, JSON.stringify(r?.evaluation)).toBe(1);
  });

  it("builds each image once for all its sessions and judges (a cache keyed by the context)", () => {
    // word-tally: 3 sessions and 3 judges, one build; broken-build: one attempt, shared by the
    // session and its prewarmed judge, and not retried (a failed build is the task's fault).
    const of = (task: string) => builds.filter((l) => l.includes(`/collection/${task}/environment`));
    expect(of("word-tally"), builds.join("\n")).toHaveLength(1);
    expect(of("broken-build"), builds.join("\n")).toHaveLength(1);
    expect(builds).toHaveLength(2);
  });

  it("ends a session whose Dockerfile fails to build ERROR at INIT, with the build log's tail", () => {
    const [r] = results["broken-build"] ?? [];
    expect(r?.status).toBe("ERROR");
    expect(r?.error).toMatch(/building the image from .*broken-build\/environment\/Dockerfile failed/);
    expect(r?.error).toContain(`BUILD-FAILS-${nonce}`);
    expect(r?.agent ?? null).toBeNull();
  });
});
