import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { dockerRuntimeFactory } from "../../batch-runner/runtime/docker.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SideService } from "../../shared/schemas/side-service.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { podmanLane } from "../support/podman.ts";
import { readTaskResults } from "../support/runner-stack.ts";
import { runPolar, shellScript } from "./polar-run-process.ts";

/*
 * Harbor side services on podman. The fixture task (test/fixtures/harbor-services/kv-store) declares
 * a key-value service in its docker-compose.yaml, built from its own Dockerfile (`FROM perl:5-slim`,
 * mapped by POLAR_BASE_IMAGES to an image this test makes from the host's perl) with a healthcheck.
 * The agent must PUT a value into it, and the tests read it back through the service, so the solved
 * variant scores 1 only when the judge reaches the very service the agent wrote to (Harbor's shared
 * verifier); the idle one scores 0. A copy whose healthcheck never passes ends ERROR at INIT with
 * the reason and the service's log, and one whose service fails to build, with the build's tail. And the isolation: on the services' loopback the agent reaches
 * `kv` by name, but not a server on the host's 127.0.0.1, the host's own addresses, or the engine's
 * bridge gateway.
 * A second fixture (secret-echo) takes a secret from the runner's environment in its compose file:
 * allowed (`--service-env`), its service answers the verifier that it got it (reward 1); a copy taking
 * a name the runner did not allow ends ERROR at INIT naming it; the value is nowhere in the store,
 * the sessions' files or the run's output, though the agent printed its whole environment.
 * A third (mcp-notes) declares `[[environment.mcp_servers]]` at its `notes` service (streamable HTTP,
 * our own server of the fixture, built `FROM node:24-slim`, mapped to the lane's image with the
 * test's node and the librt Claude Code links): imported for claude_code, whose preset writes it into
 * its MCP config, the dry-run policy calls `write_note` through the real CLI in the container, and
 * the tests ask the service for the note: 1; idle 0; the same task with `mcp_servers` dropped offers
 * no such tool, the call fails and scores 0.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = join(ROOT, "test", "fixtures", "harbor-services");
const lane = await podmanLane();
if (!lane.ok) console.warn(`harbor-services-podman: skipped: ${lane.reason}`);
const PERL_IMAGE = "localhost/polar-test-perl:fixture";
/** Stands in for `node:24-slim`: the lane's image, this test's node and librt (Claude Code's binary links it). */
const NODE_IMAGE = "localhost/polar-test-node:fixture";
/** The fixture service's description of its tool: in a model request only if the CLI listed the server's tools. */
const NOTES_TOOL = "Write a note: its text, kept by the notes service under a path.";

/** The lane's image plus the host's perl-base: enough for the fixture's kv.pl. */
async function buildPerlImage(dir: string, base: string, cli: string[]): Promise<void> {
  const ctx = join(dir, "perl-image");
  const files = [
    "/usr/bin/perl",
    "/lib/x86_64-linux-gnu/libcrypt.so.1",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/usr/lib/x86_64-linux-gnu/perl-base",
  ];
  for (const f of files) {
    const real = spawnSync("readlink", ["-f", f], { encoding: "utf8" }).stdout.trim();
    const to = join(ctx, "root", f.replace(/^\/lib\//, "/usr/lib/"));
    await mkdir(dirname(to), { recursive: true });
    await cp(real, to, { recursive: true });
  }
  await writeFile(join(ctx, "Dockerfile"), `FROM ${base}\nCOPY root/ /\n`);
  const made = spawnSync(cli[0] as string, [...cli.slice(1), "build", "-t", PERL_IMAGE, ctx], {
    encoding: "utf8",
    timeout: 180_000,
  });
  if (made.status !== 0) throw new Error(`building ${PERL_IMAGE}: ${made.stderr}`);
}

async function buildNodeImage(dir: string, base: string, cli: string[]): Promise<void> {
  const ctx = join(dir, "node-image");
  await mkdir(ctx, { recursive: true });
  // Node alone: the lane's image already holds the libraries node links.
  await cp(process.execPath, join(ctx, "node"));
  await writeFile(
    join(ctx, "Dockerfile"),
    `FROM ${base}\nCOPY node /usr/local/bin/node\nENV PATH=/usr/local/bin:/usr/bin:/bin\n`,
  );
  const made = spawnSync(cli[0] as string, [...cli.slice(1), "build", "-t", NODE_IMAGE, ctx], {
    encoding: "utf8",
    timeout: 180_000,
  });
  if (made.status !== 0) throw new Error(`building ${NODE_IMAGE}: ${made.stderr}`);
}

describe.skipIf(!lane.ok)("Harbor side services on podman", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const nonce = randomBytes(6).toString("hex");
  // The shape the fixture's service checks for; the other is set in the runner but never allowed.
  const secret = `polar-secret-${randomBytes(6).toString("hex")}`;
  const otherSecret = `polar-secret-${randomBytes(6).toString("hex")}`;

  beforeAll(async () => {
    if (!lane.ok) return;
    dir = await mkdtemp(join(tmpdir(), "polar-harbor-services-"));
    await buildPerlImage(dir, lane.image, lane.cli);
    await buildNodeImage(dir, lane.image, lane.cli);
    env = {
      ...process.env,
      POLAR_BASE_IMAGES: `debian:bookworm-slim=${lane.image},perl:5-slim=${PERL_IMAGE},node:24-slim=${NODE_IMAGE}`,
      POLAR_BUILD_DIRS: dir,
      POLAR_SESSIONS_DIR: join(dir, "sessions"),
      ECHO_SERVICE_TOKEN: secret,
      ECHO_OTHER_TOKEN: otherSecret,
    };
  }, 300_000);

  afterAll(async () => {
    if (!lane.ok) return;
    spawnSync("podman", ["rmi", "-f", PERL_IMAGE, NODE_IMAGE]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe("isolation", () => {
    let runtime: Runtime | null = null;
    let host: Server;
    let port = 0;
    let hostConnections = 0;

    beforeAll(async () => {
      if (!lane.ok) return;
      host = createServer((s) => {
        hostConnections++;
        s.end("HOST\n");
      });
      await new Promise<void>((r) => host.listen(0, "0.0.0.0", r));
      port = (host.address() as { port: number }).port;
      const kvDir = join(dir, "kv");
      await cp(join(FIXTURES, "kv-store", "environment", "kv"), kvDir, { recursive: true });
      const kv: SideService = {
        name: "kv",
        image: `build:${kvDir}`,
        env: {},
        depends_on: [],
        limits: {},
        healthcheck: {
          test: ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080"],
          interval_seconds: 1,
          timeout_seconds: 5,
          retries: 10,
          start_period_seconds: 0,
        },
      };
      const factory = dockerRuntimeFactory({
        bin: "podman",
        sessionsRoot: join(dir, "sessions"),
        build: { baseImages: { "perl:5-slim": PERL_IMAGE }, buildDirs: [dir], timeoutMs: 300_000 },
      });
      runtime = await factory.create({
        sessionId: `iso-${nonce}`,
        image: lane.image,
        env: {},
        limits: {},
        proxyUrl: "http://127.0.0.1:9",
        services: [kv],
      });
    }, 300_000);

    afterAll(async () => {
      await runtime?.stop();
      host?.close();
    });

    const probe = (target: string) =>
      runtime?.exec(["bash", "-c", `exec 3<>/dev/tcp/${target} && echo CONNECTED`], { timeoutMs: 20_000 });

    it("reaches the service by name", async () => {
      const put = await runtime?.exec(
        [
          "bash",
          "-c",
          'exec 3<>/dev/tcp/kv/8080 && printf "PUT /k HTTP/1.0\\r\\nContent-Length: 1\\r\\n\\r\\nv" >&3 && head -n 1 <&3',
        ],
        { timeoutMs: 20_000 },
      );
      expect(put?.stdout, put?.stderr).toContain("204");
    });

    it("reaches neither the host's loopback, its addresses, nor the engine's gateway", async () => {
      const hostAddrs = Object.values(networkInterfaces())
        .flat()
        .filter((a) => a && a.family === "IPv4" && !a.internal)
        .map((a) => a?.address as string);
      // podman's default bridge gateway and its host alias, besides the host's own addresses.
      const targets = ["127.0.0.1", ...hostAddrs, "10.88.0.1", "192.0.2.2"].map((a) => `${a}/${port}`);
      for (const t of targets) {
        const res = await probe(t);
        expect(res?.stdout, `${t}: ${res?.stderr}`).not.toContain("CONNECTED");
      }
      const ifaces = await runtime?.exec(["ls", "/sys/class/net"]);
      expect(ifaces?.stdout.trim()).toBe("lo");
      expect(hostConnections).toBe(0);
    });

    it("a judge sharing the services sees what the agent stored, even while the agent's bridge listens", async () => {
      const factory = dockerRuntimeFactory({ bin: "podman", sessionsRoot: join(dir, "sessions") });
      const judge = await factory.create({
        sessionId: `iso-${nonce}.eval`,
        image: lane.ok ? lane.image : "",
        env: {},
        limits: {},
        proxyUrl: "http://127.0.0.1:9",
        joinServicesOf: `iso-${nonce}`,
      });
      try {
        // The agent's command holds its bridge's port on the shared loopback while the judge runs.
        const agentBusy = runtime?.exec(["sleep", "4"], { timeoutMs: 30_000 });
        await new Promise((r) => setTimeout(r, 1500));
        const got = await judge.exec(
          [
            "bash",
            "-c",
            'exec 3<>/dev/tcp/kv/8080 && printf "GET /k HTTP/1.0\\r\\n\\r\\n" >&3 && tail -n 1 <&3',
          ],
          { timeoutMs: 20_000 },
        );
        expect(got.exitCode, got.stderr).toBe(0);
        expect(got.stdout.trim()).toBe("v");
        expect((await agentBusy)?.exitCode).toBe(0);
      } finally {
        await judge.stop();
      }
    }, 120_000);

    it("a judge given the network (--allow-verifier-network) reaches the host; one without does not", async () => {
      const factory = dockerRuntimeFactory({ bin: "podman", sessionsRoot: join(dir, "sessions") });
      const spec = { image: lane.ok ? lane.image : "", env: {}, limits: {}, proxyUrl: "http://127.0.0.1:9" };
      const open = await factory.create({ ...spec, sessionId: `judge-net-${nonce}`, network: "public" });
      const closed = await factory.create({ ...spec, sessionId: `judge-none-${nonce}` });
      try {
        const cmd = ["bash", "-c", `exec 3<>/dev/tcp/host.containers.internal/${port} && head -n 1 <&3`];
        const got = await open.exec(cmd, { timeoutMs: 20_000 });
        expect(got.stdout, got.stderr).toContain("HOST");
        const refused = await closed.exec(cmd, { timeoutMs: 20_000 });
        expect(refused.stdout).not.toContain("HOST");
      } finally {
        await Promise.all([open.stop(), closed.stop()]);
      }
    }, 120_000);
  });

  describe("a Harbor task with a side service, end to end", () => {
    let run: { code: number | null; stdout: string; stderr: string };
    const results: Record<string, SessionResult[]> = {};
    const requests: Record<string, string[]> = {};

    beforeAll(async () => {
      if (!lane.ok) return;
      await installHarness(CLI_PRESETS.pi, { log: (line) => console.log(`[pi] ${line}`) });
      await installHarness(CLI_PRESETS.claude_code, { log: (line) => console.log(`[claude_code] ${line}`) });
      const collection = join(dir, "collection");
      await cp(FIXTURES, collection, { recursive: true });
      // pi takes no MCP servers (import refuses the task naming it): mcp-notes is imported for claude_code.
      const mcpNotes = join(dir, "mcp", "mcp-notes");
      await cp(join(collection, "mcp-notes"), mcpNotes, { recursive: true });
      await rm(join(collection, "mcp-notes"), { recursive: true });
      // A copy whose healthcheck asks a port nothing listens on: never healthy.
      const sick = join(collection, "kv-unhealthy");
      await cp(join(collection, "kv-store"), sick, { recursive: true });
      const compose = join(sick, "environment", "docker-compose.yaml");
      await writeFile(
        compose,
        (await readFile(compose, "utf8"))
          .replace("/dev/tcp/127.0.0.1/8080", `/dev/tcp/127.0.0.1/9 || echo SICK-${nonce} >&2; exit 1`)
          .replace("retries: 10", "retries: 2"),
      );
      // And one whose service's Dockerfile fails to build.
      const broken = join(collection, "kv-broken");
      await cp(join(collection, "kv-store"), broken, { recursive: true });
      await writeFile(
        join(broken, "environment", "kv", "Dockerfile"),
        `FROM perl:5-slim\nRUN echo "SERVICE-BUILD-FAILS-${nonce}" && exit 3\n`,
      );
      // And one whose service takes a variable the runner does not allow (though it has it).
      const refused = join(collection, "secret-refused");
      await cp(join(collection, "secret-echo"), refused, { recursive: true });
      const refusedCompose = join(refused, "environment", "docker-compose.yaml");
      await writeFile(
        refusedCompose,
        (await readFile(refusedCompose, "utf8")).replace("ECHO_SERVICE_TOKEN", "ECHO_OTHER_TOKEN"),
      );
      const imported = await runPolar(["import-harbor", collection, "--harness", "pi"], env, 60_000);
      expect(imported.code, imported.stderr).toBe(0);
      const importedMcp = await runPolar(
        ["import-harbor", mcpNotes, "--harness", "claude_code"],
        env,
        60_000,
      );
      expect(importedMcp.code, importedMcp.stderr).toBe(0);
      const byId = Object.fromEntries(
        `${imported.stdout}${importedMcp.stdout}`
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l))
          .map((t) => [t.task_id, t]),
      );
      const solution = (await readFile(join(FIXTURES, "kv-store", "solution", "solve.sh"), "utf8"))
        .split("\n")
        .filter((l) => l.trim() !== "" && !l.startsWith("#"));
      const {
        "kv-store": kv,
        "kv-unhealthy": sickTask,
        "kv-broken": brokenTask,
        "secret-echo": echo,
        "secret-refused": echoRefused,
        "mcp-notes": notes,
      } = byId;
      expect(notes.agent.mcp_servers).toEqual([
        { name: "notes", transport: "streamable-http", url: "http://notes:8000/mcp" },
      ]);
      // Claude Code defers MCP tools: the model loads the schema with ToolSearch, then calls the tool.
      const noteCalls = [
        `ToolSearch ${JSON.stringify({ query: "select:mcp__notes__write_note", max_results: 1 })}`,
        `mcp__notes__write_note ${JSON.stringify({ path: "greeting.txt", text: "hello from the agent" })}`,
      ];
      const toolScript = (calls: string[]) =>
        ["", "```polar-script", ...calls.map((c) => `tool: ${c}`), "say: Done.", "```"].join("\n");
      const { mcp_servers: _dropped, ...notesAgentWithout } = notes.agent;
      // The agent prints its environment: a marker of its own must reach the store, the secret must not.
      const echoSolution = ["env", "cat /proc/self/environ"];
      const agentMarker = { ...echo.runtime.env, AGENT_MARKER: `agent-env-${nonce}` };
      const tasks = [
        { ...kv, task_id: "kv-solved", instruction: kv.instruction + shellScript(solution) },
        { ...kv, task_id: "kv-idle", instruction: kv.instruction + shellScript([]) },
        { ...sickTask, instruction: sickTask.instruction + shellScript(solution) },
        { ...brokenTask, instruction: brokenTask.instruction + shellScript(solution) },
        {
          ...echo,
          task_id: "secret-allowed",
          runtime: { ...echo.runtime, env: agentMarker },
          instruction: echo.instruction + shellScript(echoSolution),
        },
        { ...echoRefused, instruction: echoRefused.instruction + shellScript(echoSolution) },
        { ...notes, task_id: "mcp-solved", instruction: notes.instruction + toolScript(noteCalls) },
        { ...notes, task_id: "mcp-idle", instruction: notes.instruction + toolScript([]) },
        {
          ...notes,
          task_id: "mcp-without",
          agent: notesAgentWithout,
          instruction: notes.instruction + toolScript(noteCalls),
        },
      ];
      const tasksFile = join(dir, "tasks.jsonl");
      await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
      run = await runPolar(
        [
          "run",
          tasksFile,
          "--out",
          join(dir, "out"),
          "--run",
          "4",
          "--docker-bin",
          "podman",
          "--service-env",
          "ECHO_SERVICE_TOKEN",
        ],
        env,
        480_000,
      );
      const store = new DirectoryStore(join(dir, "out", "store"));
      for (const id of [
        "kv-solved",
        "kv-idle",
        "kv-unhealthy",
        "kv-broken",
        "secret-allowed",
        "secret-refused",
        "mcp-solved",
        "mcp-idle",
        "mcp-without",
      ])
        results[id] = await readTaskResults(store, id);
      for (const id of ["mcp-solved", "mcp-without"]) {
        const sessionId = results[id]?.[0]?.session_id ?? "";
        const { captures } = await loadCaptures(store, id, sessionId);
        requests[id] = captures.map((c) => JSON.stringify(c.request));
      }
    }, 600_000);

    it("scores the solved variant 1 (the judge reads the agent's service) and the idle one 0", () => {
      const out = `${run.stdout}\n${run.stderr}`;
      const [solved] = results["kv-solved"] ?? [];
      expect(solved?.status, `${solved?.error}\n${out}`).toBe("COMPLETED");
      expect(solved?.reward, JSON.stringify(solved?.evaluation)).toBe(1);
      const [idle] = results["kv-idle"] ?? [];
      expect(idle?.status, `${idle?.error}\n${out}`).toBe("COMPLETED");
      expect(idle?.reward, JSON.stringify(idle?.evaluation)).toBe(0);
    });

    it("ends a session whose service never becomes healthy ERROR at INIT, with the reason and its log", () => {
      const [r] = results["kv-unhealthy"] ?? [];
      expect(r?.status).toBe("ERROR");
      expect(r?.error).toMatch(/side service kv never became healthy/);
      expect(r?.error).toContain(`SICK-${nonce}`);
      expect(r?.error).toContain("kv: listening on 8080");
      expect(r?.agent ?? null).toBeNull();
    });

    it("ends a session whose service's Dockerfile fails to build ERROR at INIT, with the build log's tail", () => {
      const [r] = results["kv-broken"] ?? [];
      expect(r?.status).toBe("ERROR");
      expect(r?.error).toMatch(
        /side service kv: building the image from .*kv-broken\/environment\/kv\/Dockerfile failed/,
      );
      expect(r?.error).toContain(`SERVICE-BUILD-FAILS-${nonce}`);
      expect(r?.agent ?? null).toBeNull();
    });

    it("passes an allowed variable of the runner to the service (reward 1); one not allowed ends ERROR at INIT naming it", () => {
      const out = `${run.stdout}\n${run.stderr}`;
      const [allowed] = results["secret-allowed"] ?? [];
      expect(allowed?.status, `${allowed?.error}\n${out}`).toBe("COMPLETED");
      expect(allowed?.reward, JSON.stringify(allowed?.evaluation)).toBe(1);
      const [refused] = results["secret-refused"] ?? [];
      expect(refused?.status).toBe("ERROR");
      expect(refused?.error).toContain(
        "runtime.services echo: env ECHO_TOKEN takes ECHO_OTHER_TOKEN from the runner's environment, which this runner does not pass to services (start it with --service-env ECHO_OTHER_TOKEN)",
      );
      expect(refused?.agent ?? null).toBeNull();
    });

    it("keeps the secrets out of the store, the sessions' files and the run's output; the agent's own env is there", () => {
      const grep = (needle: string) =>
        spawnSync("grep", ["-rlaF", needle, join(dir, "out"), join(dir, "sessions")], {
          encoding: "utf8",
        }).stdout.trim();
      // The search can see what the agent printed: its own marker is in the captures.
      expect(grep(`agent-env-${nonce}`)).not.toBe("");
      for (const value of [secret, otherSecret]) {
        expect(grep(value)).toBe("");
        expect(`${run.stdout}\n${run.stderr}`).not.toContain(value);
      }
    });

    it("a task's MCP server on a side service: claude_code calls its tool in the container (1), idle 0", () => {
      const out = `${run.stdout}\n${run.stderr}`;
      const [solved] = results["mcp-solved"] ?? [];
      expect(solved?.status, `${solved?.error}\n${out}`).toBe("COMPLETED");
      expect(solved?.agent?.final_answer).toBe("Done.");
      expect(solved?.reward, JSON.stringify(solved?.evaluation)).toBe(1);
      expect(JSON.stringify(solved?.evaluation?.metadata)).toContain("200 OK hello from the agent");
      // The CLI listed the service's tools from the config its preset wrote.
      expect(requests["mcp-solved"]?.some((r) => r.includes(NOTES_TOOL))).toBe(true);
      const [idle] = results["mcp-idle"] ?? [];
      expect(idle?.status, `${idle?.error}\n${out}`).toBe("COMPLETED");
      expect(idle?.reward, JSON.stringify(idle?.evaluation)).toBe(0);
    });

    it("without its mcp_servers the same task offers no such tool: the call fails, reward 0", () => {
      const [without] = results["mcp-without"] ?? [];
      expect(without?.status, without?.error ?? "").toBe("COMPLETED");
      expect(without?.agent?.final_answer).toContain(
        "calls the tool mcp__notes__write_note but the request offers",
      );
      expect(requests["mcp-without"]?.length).toBeGreaterThan(0);
      expect(requests["mcp-without"]?.some((r) => r.includes(NOTES_TOOL))).toBe(false);
      expect(without?.reward, JSON.stringify(without?.evaluation)).toBe(0);
      expect(JSON.stringify(without?.evaluation?.metadata)).toContain("404 Not Found");
    });

    it("leaves no container of the sessions behind (services and their network holders)", () => {
      const ps = spawnSync("podman", ["ps", "-a", "--format", "{{.Names}}"], { encoding: "utf8" });
      expect(
        ps.stdout
          .split("\n")
          .filter((n) => /^polar-(kv-(solved|idle|unhealthy|broken)|secret-|mcp-|iso-|judge-)/.test(n)),
      ).toEqual([]);
    });
  });
});
