import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { dockerRuntimeFactory } from "../../batch-runner/runtime/docker.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import { HOST_NODE_DIR } from "../../batch-runner/runtime/socket-bridge.ts";
import { reapOrphanedSessions } from "../../batch-runner/runtime/work-dirs.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { podmanLane } from "../support/podman.ts";
import { readTaskResults } from "../support/runner-stack.ts";
import { POLAR, readSessionResult, scriptedTask } from "./polar-run-process.ts";

/*
 * The docker runtime on a real engine: Debian's podman, rootful, an image built on this host from
 * its own files (scripts/podman-image.ts, no registry). The container's cgroup carries the task's
 * limits and enforces the memory one; the network is cut but for the proxy bridge; nothing of the
 * runner's environment or the host's files is inside; and `polar run` takes a real harness (pi)
 * and the sandbox attacks of runner-sandbox.test.ts through INIT/READY/RUNNING/POSTRUN in it.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const lane = await podmanLane();
if (!lane.ok) console.warn(`runtime-podman: skipped: ${lane.reason}`);
const image = lane.ok ? lane.image : "";

const tag = randomBytes(6).toString("hex");
/** In the runner's environment for the whole file; none may reach a container. */
const secrets: Record<string, string> = {
  POLAR_SIGNING_KEY: `podman-signing-key-${tag}`,
  POLAR_CONTROL_TOKEN: `podman-control-token-${tag}`,
  AWS_SECRET_ACCESS_KEY: `podman-aws-secret-${tag}`,
  GITHUB_TOKEN: `podman-github-token-${tag}`,
  OPENAI_API_KEY: `podman-openai-key-${tag}`,
};

function listen(server: Server): Promise<string> {
  return new Promise((r) =>
    server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((r) => server.close(() => r()));
}

/** A TCP connect from inside the container, with the outcome on stdout: OK or the error code. */
const connectJs = (host: string, port: number) =>
  `const s=require("net").connect(${port},${JSON.stringify(host)});` +
  `s.setTimeout(3000,()=>{console.log("FAIL timeout");process.exit(0)});` +
  `s.on("connect",()=>{console.log("OK");process.exit(0)});` +
  `s.on("error",e=>{console.log("FAIL "+e.code);process.exit(0)})`;

function containerExists(name: string): boolean {
  if (!lane.ok) return false;
  return spawnSync(lane.cli[0] as string, [...lane.cli.slice(1), "container", "exists", name]).status === 0;
}

/**
 * Which of the host's `paths` a container shows, with why; [] when none. A path may show only as
 * an empty step on the way to a mount point (the engine makes a bind's parent dirs): a directory
 * outside every mount whose entries are exactly the next steps to mount points below it. A path at
 * or inside a mount other than the root, or any other file or entry, is a host file shown.
 */
async function hostFilesSeen(rt: Runtime, paths: string[]): Promise<string[]> {
  const script = [
    "cut -d' ' -f5 /proc/self/mountinfo | sed 's/^/MOUNT\t/'",
    ...paths.map(
      (p) =>
        `if [ -d '${p}' ]; then printf 'DIR\t%s' '${p}'; ls -A '${p}' | while read -r e; do printf '\t%s' "$e"; done; echo; ` +
        `elif [ -e '${p}' ]; then printf 'FILE\t%s\n' '${p}'; else printf 'ABSENT\t%s\n' '${p}'; fi`,
    ),
  ].join("\n");
  const res = await rt.exec(["sh", "-c", script]);
  const lines = res.stdout
    .trim()
    .split("\n")
    .map((l) => l.split("\t"));
  const mounts = lines.filter((l) => l[0] === "MOUNT" && l[1] !== "/").map((l) => l[1] as string);
  const seen: string[] = [];
  for (const path of paths) {
    const line = lines.find((l) => l[0] !== "MOUNT" && l[1] === path);
    if (!line) {
      seen.push(`${path}: not probed (${res.stderr.trim()})`);
      continue;
    }
    const [kind, , ...entries] = line;
    if (kind === "ABSENT") continue;
    if (mounts.some((m) => path === m || path.startsWith(`${m}/`))) {
      seen.push(`${path}: inside the bind ${mounts.find((m) => path === m || path.startsWith(`${m}/`))}`);
      continue;
    }
    const steps = new Set(
      mounts.filter((m) => m.startsWith(`${path}/`)).map((m) => m.slice(path.length + 1).split("/")[0]),
    );
    if (kind !== "DIR" || steps.size === 0) {
      seen.push(`${path}: a ${kind === "DIR" ? "directory" : "file"} on the way to no bind`);
      continue;
    }
    const extra = entries.filter((e) => !steps.has(e as string));
    if (extra.length > 0) seen.push(`${path}: holds ${extra.join(", ")} beside the way to its binds`);
  }
  return seen;
}

describe.skipIf(!lane.ok)("the docker runtime on podman", () => {
  let root: string;
  let proxy: Server;
  let proxyUrl: string;
  let other: Server;
  let otherUrl: string;
  const saved: Record<string, string | undefined> = {};
  const factory = () => dockerRuntimeFactory({ sessionsRoot: join(root, "sessions"), bin: "podman" });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-podman-"));
    proxy = createServer((req, res) => res.end(`proxy-ok ${req.url}`));
    proxyUrl = await listen(proxy);
    other = createServer((_req, res) => res.end("other-server"));
    otherUrl = await listen(other);
    for (const [k, v] of Object.entries(secrets)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await Promise.all([close(proxy), close(other)]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function withRuntime<T>(
    sessionId: string,
    limits: { cpus?: number; memory_mb?: number; pids?: number },
    body: (rt: Runtime) => Promise<T>,
  ): Promise<T> {
    const rt = await factory().create({
      sessionId,
      image,
      env: { SESSION_VISIBLE: "yes" },
      limits,
      proxyUrl,
    });
    try {
      return await body(rt);
    } finally {
      await rt.stop();
    }
  }

  it("runs commands in a container of the local image with the session's env and dirs, and removes it", async () => {
    let name = "";
    let workDir = "";
    await withRuntime("podman-life", {}, async (rt) => {
      name = (rt as unknown as { containerName: string }).containerName;
      workDir = rt.workDir;
      expect(containerExists(name)).toBe(true);
      const res = await rt.exec(
        ["sh", "-c", 'echo "$SESSION_VISIBLE $CALL_VISIBLE $HOME"; pwd; echo made > out.txt'],
        {
          env: { CALL_VISIBLE: "yes" },
        },
      );
      expect(res.stderr).toBe("");
      expect(res.stdout.split("\n").slice(0, 2)).toEqual([`yes yes ${rt.homeDir}`, rt.workDir]);
      expect(await readFile(join(rt.workDir, "out.txt"), "utf8")).toBe("made\n");
      // The engine's init (`--init`: podman binds catatonit in as podman-init) is pid 1: a container.
      const init = await rt.exec(["cat", "/proc/1/comm"]);
      expect(init.stdout.trim()).toBe("podman-init");
      // A timed-out command, with a setsid'd child of its own: both die, the container does not
      // (POSTRUN still runs commands in it), and its files stay.
      await rt.exec(["sh", "-c", "echo kept > /tmp/state"]);
      const timed = await rt.exec(["sh", "-c", "setsid sleep 1000 & sleep 30"], { timeoutMs: 1000 });
      expect(timed.timedOut).toBe(true);
      const after = await rt.exec(["sh", "-c", "cat /tmp/state; cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]);
      expect(after.exitCode, after.stderr).toBe(0);
      expect(after.stdout).toMatch(/^kept\n/);
      expect(after.stdout).not.toContain("sleep 1000");
      expect(after.stdout).not.toContain("sleep 30");
    });
    expect(containerExists(name)).toBe(false);
    expect(existsSync(workDir)).toBe(false);
  }, 60_000);

  it("puts cpus, memory_mb and pids in the container's cgroup; the memory limit kills a process that exceeds it, the pids limit refuses a fork", async () => {
    await withRuntime("podman-limits", { cpus: 1, memory_mb: 128, pids: 64 }, async (rt) => {
      // cgroup v1 (this machine) or v2: whichever the container sees.
      const read = await rt.exec([
        "sh",
        "-c",
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; " +
          "if [ -e /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max; " +
          "else echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us); fi; " +
          "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max",
      ]);
      const [memory, cpu, pids] = read.stdout.trim().split("\n");
      expect(Number(memory)).toBe(128 * 1024 * 1024);
      const [quota, period] = (cpu ?? "").split(" ").map(Number);
      expect(quota).toBe(period);
      expect(Number(pids)).toBe(64);
      // 512 MB touched page by page under a 128 MB limit: the kernel's OOM killer ends it.
      const hog = await rt.exec(
        [
          "node",
          "-e",
          "const a=[];for(let i=0;i<512;i++)a.push(Buffer.alloc(1<<20,1));console.log('survived '+a.length)",
        ],
        { timeoutMs: 60_000 },
      );
      expect(hog.stdout).not.toContain("survived");
      expect(hog.exitCode).toBe(137);
      // The container itself lives on for the next command.
      expect((await rt.exec(["echo", "alive"])).stdout).toBe("alive\n");
      // 200 sleepers under 64 pids (bounded: each ends in 5 s; last, so node above had its threads): the shell's fork is refused.
      const forks = await rt.exec(
        ["sh", "-c", "i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; echo all-started"],
        { timeoutMs: 30_000 },
      );
      expect(forks.stdout).not.toContain("all-started");
      expect(forks.stderr).toMatch(/fork/i);
    });
  }, 90_000);

  it("reaches the proxy through the bridge and nothing else: not its real address, another loopback port, or outside", async () => {
    await withRuntime("podman-net", {}, async (rt) => {
      const fetchJs = (url: string) =>
        `fetch(${JSON.stringify(url)}).then(r=>r.text()).then(t=>console.log("OK "+t),e=>console.log("FAIL "+(e.cause?.code??e.message)))`;
      const viaBridge = await rt.exec(["node", "-e", fetchJs(`${rt.proxyUrl}/v1/models`)]);
      expect(viaBridge.stdout.trim()).toBe("OK proxy-ok /v1/models");
      const targets: Array<[string, number]> = [
        ["127.0.0.1", Number(new URL(proxyUrl).port)],
        ["127.0.0.1", Number(new URL(otherUrl).port)],
        // TEST-NET-1 and a public resolver: no route out of an empty network namespace.
        ["192.0.2.1", 80],
        ["1.1.1.1", 443],
      ];
      for (const [host, port] of targets) {
        const res = await rt.exec(["node", "-e", connectJs(host, port)]);
        expect(res.stdout.trim(), `${host}:${port}`).toMatch(/^FAIL (ECONNREFUSED|ENETUNREACH)$/);
      }
      // The interfaces the container has: loopback only.
      const ifaces = await rt.exec([
        "node",
        "-e",
        "console.log(Object.keys(require('os').networkInterfaces()).join(','))",
      ]);
      expect(ifaces.stdout.trim()).toBe("lo");
    });
  }, 60_000);

  it("binds the run dir read-only: the agent cannot fill the host's disk beside its volume (issue 41)", async () => {
    await withRuntime("podman-rundir", {}, async (rt) => {
      const runDir = join(dirname(rt.workDir), "run");
      const attack = [
        `for f in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < "$f" 2>/dev/null; done | grep -q '^${runDir}/proxy.sock$' && echo FOUND`,
        `{ head -c 209715200 /dev/zero >${runDir}/fill; } 2>&1 | grep -o "Read-only file system" | head -1`,
        `i=0; while [ $i -lt 2000 ]; do true 2>/dev/null >${runDir}/f$i || break; i=$((i+1)); done; echo "FILES $i"`,
      ].join("\n");
      const res = await rt.exec(["sh", "-c", attack], { timeoutMs: 60_000 });
      expect(res.stdout, res.stderr).toBe("FOUND\nRead-only file system\nFILES 0\n");
      expect(await readdir(runDir)).toEqual(["proxy.sock"]);
      const viaBridge = await rt.exec([
        "node",
        "-e",
        `fetch(${JSON.stringify(`${rt.proxyUrl}/v1/models`)}).then(r=>r.text()).then(t=>console.log(t))`,
      ]);
      expect(viaBridge.stdout.trim()).toBe("proxy-ok /v1/models");
    });
  }, 60_000);

  it("reaches the proxy when the socket's path passes a Unix socket address's 108 bytes (issue 41)", async () => {
    // The longest session id there is: the run dir's socket path is past the limit on any host.
    await withRuntime(`podman-long-${"x".repeat(128 - 12)}`, {}, async (rt) => {
      expect(Buffer.byteLength(join(dirname(rt.workDir), "run", "proxy.sock"))).toBeGreaterThan(107);
      const viaBridge = await rt.exec([
        "node",
        "-e",
        `fetch(${JSON.stringify(`${rt.proxyUrl}/v1/models`)}).then(r=>r.text()).then(t=>console.log(t))`,
      ]);
      expect(viaBridge.stdout.trim(), viaBridge.stderr).toBe("proxy-ok /v1/models");
    });
  }, 60_000);

  it("the host-file audit still finds a host file that shows, and an entry beside a bind's parents", async () => {
    const host = join(root, "host");
    await mkdir(join(host, "shown"), { recursive: true });
    await writeFile(join(host, "shown", "host-file.txt"), "a host file");
    await writeFile(join(host, "beside.txt"), "not bound");
    const rt = await dockerRuntimeFactory({
      sessionsRoot: join(root, "sessions"),
      bin: "podman",
      readOnlyBinds: [join(host, "shown")],
    }).create({ sessionId: "podman-audit-control", image, env: {}, limits: {}, proxyUrl });
    try {
      const paths = [
        host,
        join(host, "beside.txt"),
        join(host, "shown"),
        join(host, "shown", "host-file.txt"),
      ];
      // The bind's parent is an empty step; the bound dir and its file are host files shown.
      expect(await hostFilesSeen(rt, paths)).toEqual([
        `${join(host, "shown")}: inside the bind ${join(host, "shown")}`,
        `${join(host, "shown", "host-file.txt")}: inside the bind ${join(host, "shown")}`,
      ]);
      // Something beside the way to the bind (here made inside; on a host, a file the engine let in).
      await rt.exec(["sh", "-c", `echo x > ${join(host, "extra.txt")}`]);
      expect(await hostFilesSeen(rt, [host])).toEqual([
        `${host}: holds extra.txt beside the way to its binds`,
      ]);
    } finally {
      await rt.stop();
    }
  }, 60_000);

  it("a container left by a runner killed with SIGKILL is removed by the next runner's reaper", async () => {
    const sessions = join(root, "crashed");
    const docker = join(ROOT, "batch-runner/runtime/docker.ts");
    const script = [
      `const { dockerRuntimeFactory } = await import(${JSON.stringify(docker)});`,
      `const rt = await dockerRuntimeFactory({ sessionsRoot: ${JSON.stringify(sessions)}, bin: "podman" })`,
      `  .create({ sessionId: "podman-crash", image: ${JSON.stringify(image)}, env: {}, limits: {}, proxyUrl: ${JSON.stringify(proxyUrl)} });`,
      "console.log(rt.containerName);",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const name = await new Promise<string>((done, fail) => {
      child.stdout.on("data", (c: Buffer) => done(c.toString().trim()));
      child.on("exit", (code) => fail(new Error(`the runner exited (${code}) before its container started`)));
    });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(containerExists(name)).toBe(true);
    expect(await reapOrphanedSessions(sessions)).toBe(1);
    expect(containerExists(name)).toBe(false);
    expect(await readdir(sessions)).toEqual([]);
  }, 60_000);

  it("holds no secret of the runner and none of the host's files", async () => {
    await withRuntime("podman-audit-a", {}, async (a) => {
      await withRuntime("podman-audit-b", {}, async (b) => {
        await writeFile(join(b.workDir, "neighbour.txt"), "b's file");
        const dump = await a.exec([
          "sh",
          "-c",
          "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/$PPID/environ; " +
            "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done",
        ]);
        expect(dump.stdout).toContain("SESSION_VISIBLE=yes");
        for (const [k, v] of Object.entries(secrets)) {
          expect(dump.stdout, `${k} leaked`).not.toContain(v);
          expect(dump.stdout).not.toMatch(new RegExp(`^${k}=`, "m"));
        }
        // Each is on the host (those that are not are left out): inside, none may show but as an
        // empty step on the way to a bind (the checkout under /var puts /var there, say).
        const paths = [
          "/etc/shadow",
          join(ROOT, "package.json"),
          join(b.workDir, "neighbour.txt"),
          // The other session's dir (the sessions root itself is there: the mount points' parents).
          dirname(b.workDir),
          "/home",
          "/var",
          join(process.env.HOME ?? "/root", ".bashrc"),
          // Beside the runner's node dir, which is bound in: its parent is not.
          join(dirname(HOST_NODE_DIR), ".bin"),
          // The checkout's root: a step on the way to the bridge script and examples, nothing more.
          ROOT,
          dirname(ROOT),
        ].filter((p) => p !== "/" && existsSync(p));
        expect(paths.length).toBeGreaterThanOrEqual(5);
        expect(await hostFilesSeen(a, paths)).toEqual([]);
      });
    });
  }, 60_000);
});

/** Pids whose command line is exactly `sleep <seconds>` (on the host). */
async function sleepers(seconds: number): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (cmd === `sleep\0${seconds}\0`) out.push(Number(name));
  }
  return out;
}

describe.skipIf(!lane.ok)("polar run with runtime.backend docker on podman", () => {
  let dir: string;
  let output = "";
  let code: number | null = null;
  let started = "";
  const HIDDEN = `HIDDEN-TEST-${tag}`;
  const SLEEP_SECONDS = 3000 + (Number.parseInt(tag.slice(0, 3), 16) % 900);
  const runtime = () => ({ backend: "docker", image });
  let pi: SessionResult;
  let timedOut: SessionResult;
  let piCaptures: CaptureRecord[] = [];
  const attacks: SessionResult[] = [];

  beforeAll(async () => {
    await installHarness(CLI_PRESETS.pi, { log: (line) => console.log(`[pi] ${line}`) });
    dir = await mkdtemp(join(tmpdir(), "polar-podman-run-"));
    const sessions = join(dir, "sessions");
    const store = join(dir, "out", "store");
    // runner-sandbox.test.ts's attacks, in a container this time.
    const attack = [
      `echo "session $$" > mine.txt`,
      "sleep 2",
      `cat ${store}/tasks/podman-attack.json 2>/dev/null | grep -o 'HIDDEN-TEST-[0-9a-f]*' | sed 's/^/LEAKED /'`,
      `test -r ${store}/tasks/podman-attack.json && echo TASKFILE-READ || echo TASKFILE-REFUSED`,
      `echo "WORKDIRS-SEEN $(cat ${sessions}/*/work/mine.txt 2>/dev/null | wc -l)"`,
      "cat /etc/shadow >/dev/null 2>&1 && echo SHADOW-READ || echo SHADOW-REFUSED",
      `{ tr '\\0' '\\n' < /proc/$PPID/environ; env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; done; } 2>/dev/null | grep -E '^(AWS_|POLAR_SIGNING_KEY|POLAR_CONTROL_TOKEN|GITHUB_TOKEN)' | sed 's/^/LEAKED /' | sort -u`,
      `echo "INIT $(cat /proc/1/comm)"`,
      `setsid sh -c 'echo x > escaped; exec sleep ${SLEEP_SECONDS}' </dev/null >/dev/null 2>&1 & while [ ! -s escaped ]; do sleep 0.05; done`,
      "echo END",
    ].join("\n");
    const tasks = [
      scriptedTask("pi", "podman-pi", { runtime: runtime() }),
      {
        // Runs past its budget, with a setsid'd child: TIMEOUT, and the child dies with the container.
        task_id: "podman-timeout",
        instruction: "(a command that outlives its budget)",
        timeout_seconds: 3,
        agent: {
          harness: "shell",
          settings: { command: `setsid sleep ${SLEEP_SECONDS} </dev/null >/dev/null 2>&1 & sleep 100` },
        },
        runtime: runtime(),
      },
      {
        task_id: "podman-attack",
        instruction: "(the agent's commands are in the shell command)",
        num_samples: 2,
        timeout_seconds: 60,
        agent: { harness: "shell", settings: { command: attack } },
        runtime: runtime(),
        metadata: { hidden_tests: HIDDEN },
      },
    ];
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
    started = new Date().toISOString();
    code = await new Promise<number | null>((done, fail) => {
      const child = spawn(
        process.execPath,
        [POLAR, "run", tasksFile, "--out", join(dir, "out"), "--run", "4", "--docker-bin", "podman"],
        {
          cwd: ROOT,
          env: { ...process.env, ...secrets, POLAR_SESSIONS_DIR: sessions },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
      child.stdout.on("data", (c) => (output += c));
      child.stderr.on("data", (c) => (output += c));
      child.on("error", fail);
      child.on("close", (c) => {
        clearTimeout(timer);
        done(c);
      });
    });
    pi = await readSessionResult(store, "podman-pi", output);
    piCaptures = (await loadCaptures(new DirectoryStore(store), "podman-pi", pi.session_id)).captures;
    timedOut = await readSessionResult(store, "podman-timeout", output);
    attacks.push(...(await readTaskResults(new DirectoryStore(store), "podman-attack")));
  }, 300_000);

  afterAll(async () => {
    for (const pid of await sleepers(SLEEP_SECONDS)) process.kill(pid, "SIGKILL");
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs the pi preset end to end in a podman container: answer, file, captures, trace", () => {
    expect(code, output).toBe(0);
    expect(pi.status, `${pi.error}\n${output}`).toBe("COMPLETED");
    expect(pi.agent).toEqual({ exit_code: 0, timed_out: false, final_answer: "Done." });
    expect(pi.evaluation?.metadata).toMatchObject({ content: "hi\n" });
    expect(piCaptures.length).toBeGreaterThanOrEqual(3);
    expect(pi.trajectory.reconstruction_stats.trainable_tokens).toBeGreaterThan(0);
    // Every stage ran: INIT (container start), READY, RUNNING, POSTRUN.
    const t = pi.timings;
    for (const ms of [t.init_ms, t.ready_wait_ms, t.run_ms, t.postrun_ms]) expect(ms).not.toBeNull();
  });

  it("ran each session in a container of its own, all removed at the end", () => {
    const cli = lane.ok ? lane.cli : [];
    const events = spawnSync(
      cli[0] as string,
      [
        ...cli.slice(1),
        "events",
        "--stream=false",
        "--since",
        started,
        "--filter",
        "event=start",
        "--format",
        "{{.Name}}",
      ],
      { encoding: "utf8" },
    ).stdout;
    for (const r of [pi, timedOut, ...attacks]) {
      const name = `polar-${r.session_id}`;
      expect(events, `no container started for ${r.session_id}`).toContain(name);
      const left = spawnSync(
        cli[0] as string,
        [...cli.slice(1), "ps", "-a", "--filter", `name=${name}`, "--format", "{{.Names}}"],
        {
          encoding: "utf8",
        },
      ).stdout;
      expect(left.trim()).toBe("");
    }
  });

  it("the attacks: no task file, no other session, no /etc/shadow, no secret; pid 1 is the container's init", () => {
    expect(attacks).toHaveLength(2);
    for (const r of attacks) {
      expect(r.status, r.error ?? "").toBe("COMPLETED");
      const answer = r.agent?.final_answer ?? "";
      expect(answer).toMatch(/END$/);
      expect(answer).toContain("TASKFILE-REFUSED");
      expect(answer).not.toContain(HIDDEN);
      expect(answer).toContain("WORKDIRS-SEEN 1");
      expect(answer).toContain("SHADOW-REFUSED");
      expect(answer).toContain("INIT podman-init");
      expect(answer).not.toContain("LEAKED");
      for (const value of Object.values(secrets)) expect(JSON.stringify(r)).not.toContain(value);
    }
  });

  it("ends a session past its budget TIMEOUT, with a result", () => {
    expect(timedOut.status).toBe("TIMEOUT");
    expect(timedOut.error).toMatch(/exceeded its budget of 3s/);
    expect(timedOut.agent?.timed_out).toBe(true);
  });

  it("leaves no process behind (setsid included, in the attacks and the timed-out session)", async () => {
    let left = await sleepers(SLEEP_SECONDS);
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = await sleepers(SLEEP_SECONDS);
    }
    expect(left).toEqual([]);
  });
});
