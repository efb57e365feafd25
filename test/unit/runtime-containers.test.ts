import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apptainerFlags, apptainerRuntimeFactory } from "../../batch-runner/runtime/apptainer.ts";
import {
  type HostFacts,
  type Probe,
  podmanFlags,
  resolveContainerEngine,
} from "../../batch-runner/runtime/container-engine.ts";
import { dockerRunArgs, dockerRuntimeFactory } from "../../batch-runner/runtime/docker.ts";
import type { RuntimeFactory } from "../../batch-runner/runtime/runtime.ts";
import { HOST_NODE_DIR, SANDBOX_BRIDGE_SCRIPT } from "../../batch-runner/runtime/socket-bridge.ts";

const dirs = { root: "/s/x", workDir: "/s/x/work", homeDir: "/s/x/home", runDir: "/s/x/run" };

describe("container command lines", () => {
  it("docker run: no network, the session dirs bound at their host paths, limits, a sleeping init", () => {
    const argv = dockerRunArgs({
      name: "polar-x",
      dirs,
      spec: {
        sessionId: "x",
        image: "ghcr.io/acme/agent:1",
        env: {},
        limits: { cpus: 2, memory_mb: 4096, gpus: 1 },
        proxyUrl: "http://127.0.0.1:1",
      },
    });
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    expect(argv).toEqual([
      "run",
      "-d",
      "--init",
      "--name",
      "polar-x",
      "--network",
      "none",
      "--user",
      `${uid}:${gid}`,
      "-v",
      "/s/x/work:/s/x/work",
      "-v",
      "/s/x/home:/s/x/home",
      "-v",
      "/s/x/run:/s/x/run:ro",
      "-v",
      `${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`,
      "-v",
      `${SANDBOX_BRIDGE_SCRIPT}:${SANDBOX_BRIDGE_SCRIPT}:ro`,
      "--cpus",
      "2",
      "--memory",
      "4096m",
      "--gpus",
      "1",
      "--entrypoint",
      "sleep",
      "ghcr.io/acme/agent:1",
      "infinity",
    ]);
  });

  it("docker run: the engine's own flags go right after --user, before the binds", () => {
    const spec = { sessionId: "x", image: "img", env: {}, limits: {}, proxyUrl: "http://127.0.0.1:1" };
    const argv = dockerRunArgs({ name: "n", dirs, spec, engineFlags: ["--ulimit", "nofile=9:9"] });
    const user = argv.indexOf("--user");
    expect(argv.slice(user + 2, user + 5)).toEqual(["--ulimit", "nofile=9:9", "-v"]);
  });

  it("apptainer: --containall, --net --network none, binds, and --nv only with GPUs", () => {
    const flags = apptainerFlags({ dirs, gpus: true });
    expect(flags.slice(0, 6)).toEqual(["--containall", "--net", "--network", "none", "--home", "/s/x/home"]);
    expect(flags).toContain("/s/x/work:/s/x/work");
    expect(flags).toContain("/s/x/run:/s/x/run:ro");
    expect(flags).toContain(`${HOST_NODE_DIR}:${HOST_NODE_DIR}:ro`);
    expect(flags.at(-1)).toBe("--nv");
    expect(apptainerFlags({ dirs, gpus: false })).not.toContain("--nv");
  });

  it("binds extra host paths (the harness cache) read-only at the same path", () => {
    const spec = { sessionId: "x", image: "img", env: {}, limits: {}, proxyUrl: "http://127.0.0.1:1" };
    const docker = dockerRunArgs({ name: "n", dirs, spec, readOnly: ["/cache/harnesses"] });
    expect(docker.join(" ")).toContain("-v /cache/harnesses:/cache/harnesses:ro");
    const apptainer = apptainerFlags({ dirs, gpus: false, readOnly: ["/cache/harnesses"] });
    expect(apptainer.join(" ")).toContain("--bind /cache/harnesses:/cache/harnesses:ro");
    expect(dockerRunArgs({ name: "n", dirs, spec }).join(" ")).not.toContain("/cache/harnesses");
  });

  it("refuses to start without an image", async () => {
    const root = await mkdtemp(join(tmpdir(), "polar-noimg-"));
    try {
      const spec = { sessionId: "x", env: {}, limits: {}, proxyUrl: "http://127.0.0.1:1" };
      await expect(dockerRuntimeFactory({ sessionsRoot: root, bin: "false" }).create(spec)).rejects.toThrow(
        /runtime.image is required/,
      );
      await expect(
        apptainerRuntimeFactory({ sessionsRoot: root, bin: "false" }).create(spec),
      ).rejects.toThrow(/runtime.image is required/);
      // Refused before any session dir or socket bridge was made, so nothing is left behind.
      expect(await readdir(root)).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

const bwrapWorks = spawnSync("bwrap", ["--ro-bind", "/", "/", "--unshare-net", "true"]).status === 0;
if (!bwrapWorks) console.warn("skipping container lifecycle tests: the fake engines need a working bwrap");
const support = fileURLToPath(new URL("../support/", import.meta.url));

describe.skipIf(!bwrapWorks)(
  "container lifecycle with stand-in engines (fake-docker, fake-apptainer -> bwrap)",
  () => {
    let root: string;
    let proxy: Server;
    let proxyUrl: string;
    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), "polar-ctr-"));
      // The runtimes hand engines a minimal env, so the state dir is baked into a wrapper script.
      for (const engine of ["fake-docker", "fake-apptainer"]) {
        const wrapper = join(root, engine);
        await writeFile(
          wrapper,
          `#!/bin/sh\nFAKE_CONTAINER_STATE=${join(root, "state")} exec ${process.execPath} ${join(support, engine)} "$@"\n`,
        );
        await chmod(wrapper, 0o755);
      }
      proxy = createServer((req, res) => res.end(`proxy-ok ${req.url}`));
      await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
      proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
      await rm(root, { recursive: true, force: true });
    });

    const cases: Array<[string, () => RuntimeFactory, string, string]> = [
      [
        "docker",
        () => dockerRuntimeFactory({ sessionsRoot: join(root, "s"), bin: join(root, "fake-docker") }),
        "acme/agent:1",
        "rm",
      ],
      [
        "apptainer exec",
        () => apptainerRuntimeFactory({ sessionsRoot: join(root, "s"), bin: join(root, "fake-apptainer") }),
        "/images/agent.sif",
        "exec",
      ],
      [
        "apptainer instance",
        () =>
          apptainerRuntimeFactory({
            sessionsRoot: join(root, "s"),
            bin: join(root, "fake-apptainer"),
            mode: "instance",
          }),
        "/images/agent.sif",
        "instance",
      ],
    ];

    it.each(cases)(
      "%s: env in, proxy reachable via the bridge, network cut, files shared, torn down",
      async (_name, make, image, lastCall) => {
        const rt = await make().create({
          sessionId: "ctr",
          image,
          env: { TASK_VAR: "t" },
          limits: {},
          proxyUrl,
        });
        const fetchJs = (url: string) =>
          `fetch(${JSON.stringify(url)}).then(r=>r.text()).then(t=>console.log("OK "+t),e=>console.log("FAIL "+(e.cause?.code??e.message)))`;
        try {
          const env = await rt.exec(
            ["sh", "-c", 'echo "$TASK_VAR $CALL_VAR $HOME"; pwd; echo made > out.txt'],
            {
              env: { CALL_VAR: "c" },
            },
          );
          expect(env.stderr).toBe("");
          expect(env.stdout.split("\n").slice(0, 2)).toEqual([`t c ${rt.homeDir}`, rt.workDir]);
          expect(await readFile(join(rt.workDir, "out.txt"), "utf8")).toBe("made\n");
          const viaBridge = await rt.exec([process.execPath, "-e", fetchJs(`${rt.proxyUrl}/v1/models`)]);
          expect(viaBridge.stdout.trim()).toBe("OK proxy-ok /v1/models");
          const direct = await rt.exec([process.execPath, "-e", fetchJs(proxyUrl)]);
          expect(direct.stdout.trim()).toMatch(/^FAIL /);
          const timed = await rt.exec(["sleep", "30"], { timeoutMs: 300 });
          expect(timed.timedOut).toBe(true);
        } finally {
          await rt.stop();
        }
        expect(existsSync(rt.workDir)).toBe(false);
        const calls = (await readFile(join(root, "state", "calls.log"), "utf8"))
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(calls.at(-1)[0]).toBe(lastCall);
      },
    );
  },
);

describe("the engine behind the docker runtime (container-engine.ts)", () => {
  const ordinary: HostFacts = {
    uid: 0,
    capSysResource: true,
    hardNofile: 1048576,
    hardNproc: 96365,
    hybridCgroupControllers: false,
    runcInstalled: true,
  };

  it("podman needs no flags on an ordinary root host, nor rootless", () => {
    expect(podmanFlags(ordinary)).toEqual({ globalFlags: [], runFlags: [] });
    expect(podmanFlags({ ...ordinary, uid: 1000, capSysResource: false })).toEqual({
      globalFlags: [],
      runFlags: [],
    });
  });

  it("podman on a hybrid cgroup host runs runc (crun refuses it), when runc is there", () => {
    expect(podmanFlags({ ...ordinary, hybridCgroupControllers: true }).globalFlags).toEqual([
      "--runtime",
      "runc",
    ]);
    expect(
      podmanFlags({ ...ordinary, hybridCgroupControllers: true, runcInstalled: false }).globalFlags,
    ).toEqual([]);
  });

  it("podman as root without CAP_SYS_RESOURCE grants the runner's own hard limits, nproc at most podman's", () => {
    const facts = { ...ordinary, capSysResource: false, hardNofile: 20000 };
    expect(podmanFlags(facts).runFlags).toEqual([
      "--ulimit",
      "nofile=20000:20000",
      "--ulimit",
      "nproc=32768:32768",
    ]);
    expect(podmanFlags({ ...facts, hardNproc: 500 }).runFlags).toContain("nproc=500:500");
  });

  /** A stand-in for the host's binaries: what each answers, null for one that fails. */
  const probeOf =
    (answers: Record<string, string | null>): Probe =>
    async (bin, args) =>
      answers[`${bin} ${args[0]}`] ?? null;

  it("picks docker when its daemon answers, podman when only podman runs, docker when neither", async () => {
    const docker = probeOf({ "docker info": "27.0.1\n", "docker --version": "Docker version 27.0.1\n" });
    expect(await resolveContainerEngine(undefined, docker, () => ordinary)).toEqual({
      bin: "docker",
      kind: "docker",
      globalFlags: [],
      runFlags: [],
    });
    // This machine: a docker client with no daemon on PATH, and podman.
    const podman = probeOf({
      "docker --version": "Docker version 27.0.1\n",
      "podman info": "4.3.1\n",
      "podman --version": "podman version 4.3.1\n",
    });
    const hybrid = { ...ordinary, hybridCgroupControllers: true };
    expect(await resolveContainerEngine(undefined, podman, () => hybrid)).toMatchObject({
      bin: "podman",
      kind: "podman",
      globalFlags: ["--runtime", "runc"],
    });
    expect((await resolveContainerEngine(undefined, probeOf({}), () => hybrid)).bin).toBe("docker");
  });

  it("an explicit binary is used as given; podman's docker wrapper is recognised by its --version", async () => {
    const wrapper = probeOf({ "/usr/bin/docker --version": "podman version 4.3.1\n" });
    const hybrid = { ...ordinary, hybridCgroupControllers: true };
    expect(await resolveContainerEngine("/usr/bin/docker", wrapper, () => hybrid)).toMatchObject({
      bin: "/usr/bin/docker",
      kind: "podman",
      globalFlags: ["--runtime", "runc"],
    });
  });
});
