import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultSessionLimits } from "../../batch-runner/runner-defaults.ts";
import { apptainerFlags } from "../../batch-runner/runtime/apptainer.ts";
import { bwrapProblem, bwrapRuntimeFactory } from "../../batch-runner/runtime/bwrap.ts";
import { cgroupLayout, cgroupSupport } from "../../batch-runner/runtime/cgroup.ts";
import { diskVolumeSupport } from "../../batch-runner/runtime/disk-volume.ts";
import { dockerRunArgs } from "../../batch-runner/runtime/docker.ts";
import { engineLimits, ignoresLimits } from "../../batch-runner/runtime/host-limits.ts";
import { effectiveLimits } from "../../batch-runner/runtime/limits.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import {
  type Runtime,
  type RuntimeSpecInput,
  RuntimeSpecRefused,
} from "../../batch-runner/runtime/runtime.ts";
import { reapOrphanedSessions } from "../../batch-runner/runtime/work-dirs.ts";

const bwrap = bwrapProblem();
const cg = cgroupSupport();
const enforceable =
  bwrap === null && cg.memory_mb === true && cg.pids === true && diskVolumeSupport() === true;

const spec = (limits: RuntimeSpecInput["limits"], sessionId = "limits"): RuntimeSpecInput => ({
  sessionId,
  env: {},
  limits,
  proxyUrl: "http://127.0.0.1:9",
});

/** Every pid of this host whose cwd or command line names the session root. */
async function leftovers(root: string): Promise<number> {
  const { readdir, readlink, readFile } = await import("node:fs/promises");
  let n = 0;
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const cwd = await readlink(`/proc/${name}/cwd`).catch(() => "");
    const cmd = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (cwd.startsWith(root) || cmd.includes(root)) n++;
  }
  return n;
}

describe("session limits: which are enforced, which refused", () => {
  const support = {
    memory_mb: true,
    pids: true,
    cpus: "no cpu controller",
    disk_mb: "not root",
    output_mb: true,
    gpus: "no GPU devices",
  } as const;

  it("a limit the task asks for and the backend cannot enforce refuses the session, naming both", () => {
    expect(() => effectiveLimits("bwrap", { disk_mb: 100 }, {}, support)).toThrow(RuntimeSpecRefused);
    expect(() => effectiveLimits("bwrap", { disk_mb: 100 }, {}, support)).toThrow(
      "runtime.limits.disk_mb cannot be enforced by bwrap here: not root",
    );
    expect(() => effectiveLimits("bwrap", { gpus: 1 }, {}, support)).toThrow(/gpus/);
  });

  it("a runner default the backend cannot enforce is dropped; the task's own values win", () => {
    expect(
      effectiveLimits(
        "bwrap",
        { memory_mb: 512, gpus: 0 },
        { memory_mb: 4096, pids: 4096, disk_mb: 9 },
        support,
      ),
    ).toEqual({ memory_mb: 512, pids: 4096 });
  });

  it("container engines get memory, cpus, pids (and GPUs) as their own flags (argv only: no engine here)", () => {
    const dirs = { root: "/s/x", workDir: "/s/x/work", homeDir: "/s/x/home", runDir: "/s/x/run" };
    const limits = { cpus: 2, memory_mb: 512, pids: 128 };
    const docker = dockerRunArgs({ name: "polar-x", dirs, spec: { ...spec(limits), image: "img" } });
    const pairs = (argv: string[]) => argv.slice(0, -1).map((a, i) => `${a} ${argv[i + 1]}`);
    expect(pairs(docker)).toEqual(expect.arrayContaining(["--cpus 2", "--memory 512m", "--pids-limit 128"]));
    const apptainer = apptainerFlags({ dirs, gpus: false, limits });
    expect(pairs(apptainer)).toEqual(
      expect.arrayContaining(["--memory 512M", "--cpus 2", "--pids-limit 128"]),
    );
  });

  it("runner defaults derive from the node: RAM and threads split between the run slots, with floors", () => {
    const gib = 1024 ** 3;
    expect(
      defaultSessionLimits(4, { totalMemBytes: 24 * gib, threadsMax: 192_730, freeDiskBytes: 60 * gib }),
    ).toEqual({
      memory_mb: 4915,
      pids: 4096,
      output_mb: 1024,
      disk_mb: 7680,
    });
    expect(defaultSessionLimits(64, { totalMemBytes: 8 * gib, threadsMax: 31_000 })).toEqual({
      memory_mb: 1024,
      pids: 256,
      output_mb: 1024,
    });
  });

  it("apptainer gets a task's memory and pids but not the runner's defaults (its cgroup flags need root)", () => {
    const defaults = { memory_mb: 4096, pids: 4096, output_mb: 1024 };
    expect(engineLimits("apptainer", { ...spec({}), defaultLimits: defaults })).toEqual({ output_mb: 1024 });
    expect(engineLimits("apptainer", { ...spec({ memory_mb: 512 }), defaultLimits: defaults })).toEqual({
      memory_mb: 512,
      output_mb: 1024,
    });
    expect(engineLimits("docker", { ...spec({}), defaultLimits: defaults })).toEqual(defaults);
  });

  it("rootless podman on a cgroup v1 host would ignore the limit flags: they count as not enforceable", () => {
    expect(ignoresLimits("podman", { root: false, cgroupV2: false })).toMatch(/rootless podman ignores/);
    expect(ignoresLimits("/usr/bin/podman", { root: true, cgroupV2: false })).toBeNull();
    expect(ignoresLimits("podman", { root: false, cgroupV2: true })).toBeNull();
    expect(ignoresLimits("docker", { root: false, cgroupV2: false })).toBeNull();
  });

  it("process refuses a disk limit (its agent writes wherever the runner's user can)", async () => {
    const root = await mkdtemp(join(tmpdir(), "polar-limits-"));
    try {
      await expect(
        processRuntimeFactory({ sessionsRoot: root }).create(spec({ disk_mb: 64 })),
      ).rejects.toThrow(/runtime\.limits\.disk_mb cannot be enforced by process/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!enforceable)("bwrap session limits, enforced by the kernel", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-limits-"));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** A bwrap session held to `limits`, stopped after `body` whatever it asserts. */
  async function inSession(
    limits: RuntimeSpecInput["limits"],
    id: string,
    body: (rt: Runtime) => Promise<void>,
  ): Promise<Runtime> {
    const rt = await bwrapRuntimeFactory({ sessionsRoot: join(root, "sessions") }).create(spec(limits, id));
    try {
      await body(rt);
    } finally {
      await rt.stop();
    }
    return rt;
  }

  it("pids: 200 forks under a limit of 64 end as limit:pids, and nothing is left", async () => {
    await inSession({ pids: 64 }, "pids", async (rt) => {
      const res = await rt.exec(["sh", "-c", "for i in $(seq 200); do sleep 30 & done; wait"], {
        timeoutMs: 20_000,
      });
      expect(res.limit).toBe("pids");
      expect(res.timedOut).toBe(false);
    });
    expect(await leftovers(join(root, "sessions"))).toBe(0);
  });

  it("memory: 256 MiB written under a limit of 64 MiB end as limit:memory", async () => {
    await inSession({ memory_mb: 64 }, "memory", async (rt) => {
      const res = await rt.exec(["python3", "-c", "a = b'x' * (256 * 1024 * 1024); print(len(a))"], {
        timeoutMs: 20_000,
      });
      expect(res.limit).toBe("memory");
      expect(res.stdout).toBe("");
    });
  });

  it("disk: 64 MiB written to a 16 MiB work dir end as limit:disk, and the volume is gone after stop", async () => {
    const rt = await inSession({ disk_mb: 16 }, "disk", async (rt) => {
      const res = await rt.exec(["sh", "-c", "dd if=/dev/zero of=big bs=1M count=64; echo done"], {
        timeoutMs: 20_000,
      });
      expect(res.limit).toBe("disk");
      expect(rt.workDir.startsWith(join(root, "sessions"))).toBe(true);
    });
    expect(existsSync(rt.workDir)).toBe(false);
    expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(root);
  });

  it("output: 5 MB printed under output_mb 1 end as limit:output, cut at once", async () => {
    await inSession({ output_mb: 1 }, "output", async (rt) => {
      const started = Date.now();
      const res = await rt.exec(["sh", "-c", "while true; do head -c 1000000 /dev/zero; done"], {
        timeoutMs: 20_000,
      });
      expect(res.limit).toBe("output");
      expect(Date.now() - started).toBeLessThan(10_000);
    });
  });

  it("cpus: a busy loop under cpus 0.1 gets about a tenth of a CPU", async () => {
    await inSession({ cpus: 0.1 }, "cpus", async (rt) => {
      const spin =
        "import resource, time\nt = time.time()\nwhile time.time() - t < 1.5: pass\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_utime)";
      const res = await rt.exec(["python3", "-c", spin], { timeoutMs: 20_000 });
      expect(res.exitCode, res.stderr).toBe(0);
      // Unthrottled it would be close to 1.5 s on an idle core.
      expect(Number(res.stdout)).toBeLessThan(0.45);
      expect(res.limit).toBeNull();
    });
  });

  it("a command that stays inside its limits has none hit", async () => {
    await inSession({ pids: 64, memory_mb: 256, disk_mb: 32, output_mb: 1 }, "fine", async (rt) => {
      const res = await rt.exec(["sh", "-c", "echo hi > f && cat f"]);
      expect(res).toMatchObject({ exitCode: 0, stdout: "hi\n", limit: null });
    });
  });
});

describe.skipIf(cg.pids !== true)("process runtime: the cgroup finds what the marker scan cannot", () => {
  it("a daemon that clears its environment and leaves the session dirs is killed at stop", async () => {
    const root = await mkdtemp(join(tmpdir(), "polar-limits-"));
    const seconds = 5000 + Math.floor(Math.random() * 900);
    let orphan: Runtime | undefined;
    const sleepers = async () => {
      const { readdir, readFile } = await import("node:fs/promises");
      const found: number[] = [];
      for (const name of await readdir("/proc")) {
        const cmd = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
        if (cmd === `sleep\0${seconds}\0`) found.push(Number(name));
      }
      return found;
    };
    try {
      const rt = await processRuntimeFactory({ sessionsRoot: root }).create(spec({ pids: 64 }, "escape"));
      const res = await rt.exec([
        "sh",
        "-c",
        `(cd / && env -i setsid sleep ${seconds} </dev/null >/dev/null 2>&1 &) ; sleep 0.2; echo forked`,
      ]);
      expect(res.stdout.trim()).toBe("forked");
      expect(await sleepers()).toHaveLength(1);
      await rt.stop();
      expect(await sleepers()).toEqual([]);

      // A runner that died (SIGKILL) leaves the daemon and the cgroup: the next runner's reaper ends both.
      orphan = await processRuntimeFactory({ sessionsRoot: root }).create(spec({ pids: 64 }, "orphan"));
      await orphan.exec([
        "sh",
        "-c",
        `(cd / && env -i setsid sleep ${seconds} </dev/null >/dev/null 2>&1 &) ; sleep 0.2`,
      ]);
      expect(await sleepers()).toHaveLength(1);
      const dead = spawnSync("true").pid as number;
      await writeFile(join(dirname(orphan.workDir), "runner.pid"), String(dead));
      expect(await reapOrphanedSessions(root)).toBe(1);
      expect(await sleepers()).toEqual([]);
      const orphanId = orphan.id;
      const groups = Object.values(cgroupLayout().parents).map((p) => join(p, `polar-${orphanId}`));
      expect(groups.filter((g) => existsSync(g))).toEqual([]);
    } finally {
      for (const pid of await sleepers()) process.kill(pid, "SIGKILL");
      // Idempotent; removes the cgroup when an assertion above failed before the reaper ran.
      await orphan?.stop();
      await rm(root, { recursive: true, force: true });
    }
  });
});
