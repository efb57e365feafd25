import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { durationSeconds, readComposeServices } from "../../batch-runner/harbor/compose.ts";
import { HarborTaskRefused } from "../../batch-runner/harbor/harbor-refusal.ts";
import { judgeSpecOf } from "../../batch-runner/pipeline/judge-spec.ts";
import { startOrder } from "../../batch-runner/runtime/side-services.ts";
import { RuntimeSpec } from "../../shared/schemas/task.ts";

/** A compose file is the task author's, not the operator's: anything reaching past the loopback is refused by name. */
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-compose-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function task(compose: string): Promise<string> {
  const t = await mkdtemp(join(dir, "t-"));
  await mkdir(join(t, "environment", "api"), { recursive: true });
  await writeFile(join(t, "environment", "api", "Dockerfile"), "FROM x\n");
  await writeFile(join(t, "environment", "docker-compose.yaml"), compose);
  return t;
}

const API = `services:
  main:
    depends_on:
      api:
        condition: service_healthy
  api:
    build:
      context: ./api
    expose: ["5000"]
    environment:
      - MODE=test
    healthcheck:
      test: ["CMD", "python3", "-c", "import socket; socket.create_connection(('localhost',5000))"]
      interval: 2s
      timeout: 5s
      retries: 15
      start_period: 1m30s
`;

describe("compose.ts", () => {
  it("reads a cookbook-style service: build context, health, env", async () => {
    const t = await task(API);
    const [api, ...rest] = await readComposeServices(t);
    expect(rest).toEqual([]);
    expect(api).toEqual({
      name: "api",
      image: `build:${t}/environment/api`,
      env: { MODE: "test" },
      healthcheck: {
        test: ["python3", "-c", "import socket; socket.create_connection(('localhost',5000))"],
        interval_seconds: 2,
        timeout_seconds: 5,
        retries: 15,
        start_period_seconds: 90,
      },
      depends_on: [],
      limits: {},
    });
  });

  it.each([
    ["ports", '    ports: ["8080:8080"]\n', /services\.api\.ports: ports are not published to the host/],
    ["privileged", "    privileged: true\n", /services\.api\.privileged: services run unprivileged/],
    ["host volume", '    volumes: ["/etc:/host-etc"]\n', /services\.api\.volumes: volumes are not mounted/],
    ["network_mode host", "    network_mode: host\n", /services\.api\.network_mode:/],
    ["devices", '    devices: ["/dev/kvm"]\n', /services\.api\.devices: no device/],
    ["cap_add", '    cap_add: ["NET_ADMIN"]\n', /services\.api\.cap_add/],
    [
      "interpolation in a command",
      '    command: ["sh", "-c", "echo $HOME"]\n',
      /services\.api\.command\[2\]: \$VARIABLE/,
    ],
    [
      "the bridge's port",
      '    expose: ["18787"]\n',
      /services\.api\.expose: port 18787 of the shared loopback is Polar's/,
    ],
    ["an unknown key", "    stdin_open: true\n", /services\.api: .*stdin_open/],
  ])("refuses %s by name", async (_what, extra, why) => {
    const t = await task(`services:\n  api:\n    build: ./api\n${extra}`);
    const err = await readComposeServices(t).catch((e) => e);
    expect(err).toBeInstanceOf(HarborTaskRefused);
    expect(err.message).toMatch(why);
  });

  it("refuses a build context outside environment/ and an agent container set up in compose", async () => {
    const out = await task("services:\n  api:\n    build: ../../etc\n");
    expect((await readComposeServices(out).catch((e) => e)).message).toMatch(
      /not a directory inside environment/,
    );
    // Issue 49: Polar's own build references as a service's image bypassed the rule above.
    for (const image of ["build:/etc", "build:timeout=1:/etc", "prebuilt:build:/etc", "prebuilt:alpine"]) {
      const ref = await task(`services:\n  api:\n    image: ${JSON.stringify(image)}\n`);
      const err = await readComposeServices(ref).catch((e) => e);
      expect(err, image).toBeInstanceOf(HarborTaskRefused);
      expect(err.message).toMatch(
        /services\.api\.image: .* is one of Polar's build references, not an image/,
      );
    }
    const main = await task("services:\n  main:\n    privileged: true\n");
    expect((await readComposeServices(main).catch((e) => e)).message).toMatch(/services\.main\.privileged/);
    const top = await task("services: {}\nvolumes:\n  data: {}\n");
    expect((await readComposeServices(top).catch((e) => e)).message).toMatch(
      /volumes: volumes are not mounted/,
    );
  });

  it("parses compose durations", () => {
    expect(durationSeconds("1m30s")).toBe(90);
    expect(durationSeconds("500ms")).toBe(0.5);
    expect(durationSeconds("2x")).toBeNull();
  });

  it("starts services after what they depend on; a cycle is refused", () => {
    const s = (name: string, deps: string[]) => ({ name, image: "x", env: {}, depends_on: deps, limits: {} });
    expect(startOrder([s("a", ["b"]), s("b", [])]).map((x) => x.name)).toEqual(["b", "a"]);
    expect(() => startOrder([s("a", ["b"]), s("b", ["a"])])).toThrow(/dependency cycle/);
  });
});

describe("judgeSpecOf", () => {
  const services = RuntimeSpec.parse({ backend: "docker", services: [{ name: "kv", image: "x" }] }).services;
  it("a shared judge joins the agent's services and gets no network even when allowed", () => {
    expect(judgeSpecOf({ services, judge_network: true }, "s1", true)).toEqual({
      services: [],
      joinServicesOf: "s1",
    });
  });
  it("a separate judge starts its own; the network only under the operator's switch", () => {
    const sep = { services, judge_services: "separate" as const, judge_network: true };
    expect(judgeSpecOf(sep, "s1", false)).toEqual({ services });
    expect(judgeSpecOf(sep, "s1", true)).toEqual({ services, network: "public" });
    expect(judgeSpecOf({ services: [], judge_network: true }, "s1", false)).toEqual({ services: [] });
  });
});

describe("import-harbor: side services and the verifier phase", () => {
  it("attaches the compose services; a separate verifier and the network asked are recorded", async () => {
    const { importHarborTask } = await import("../../batch-runner/harbor/import-task.ts");
    const t = await task(API);
    await writeFile(join(t, "environment", "Dockerfile"), "FROM x\nWORKDIR /app\n");
    await writeFile(join(t, "instruction.md"), "Ask the api.\n");
    await mkdir(join(t, "tests"));
    await writeFile(join(t, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n");
    await writeFile(join(t, "task.toml"), '[verifier]\nenvironment_mode = "separate"\n');
    const { task: sep } = await importHarborTask(t, { agent: { harness: "pi" } });
    const runtime = sep.runtime as Record<string, unknown>;
    expect((runtime.services as { name: string }[]).map((s) => s.name)).toEqual(["api"]);
    expect(runtime.judge_services).toBe("separate");
    expect(runtime.judge_network).toBe(true);
    await writeFile(join(t, "task.toml"), '[environment]\nnetwork_mode = "no-network"\n');
    const { task: shared, warnings } = await importHarborTask(t, { agent: { harness: "pi" } });
    expect(shared.runtime).not.toHaveProperty("judge_services");
    expect(shared.runtime).not.toHaveProperty("judge_network");
    expect(warnings).toEqual([]);
  });
});

describe("runtime.services", () => {
  it("reads $$ as a literal $, and are refused on a backend that cannot start them", async () => {
    const t = await task('services:\n  api:\n    build: ./api\n    command: ["sh", "-c", "echo $$HOME"]\n');
    expect((await readComposeServices(t))[0]?.command).toEqual(["sh", "-c", "echo $HOME"]);
    const services = [{ name: "kv", image: "x" }];
    expect(RuntimeSpec.safeParse({ backend: "docker", services }).success).toBe(true);
    const bwrap = RuntimeSpec.safeParse({ backend: "bwrap", services });
    expect(bwrap.error?.issues[0]?.message).toBe("side services run only on the docker backend, not bwrap");
  });
});

describe("side services and --max-task-limits", () => {
  it("holds each service's caps (its defaults when unset) to the runner's ceilings", async () => {
    const { checkTaskCeilings } = await import("../../batch-runner/runtime/task-ceilings.ts");
    const task = (limits: Record<string, number>) => ({
      timeout_seconds: 60,
      agent: {},
      runtime: { limits: {}, services: [{ name: "kv", image: "x", env: {}, depends_on: [], limits }] },
    });
    expect(() => checkTaskCeilings(task({ memory_mb: 4096 }), { memory_mb: 1024 })).toThrow(
      /runtime.services kv: limits.memory_mb 4096 is above this runner's ceiling 1024/,
    );
    expect(() => checkTaskCeilings(task({}), { pids: 100 })).toThrow(/limits.pids 256 \(the default\)/);
    expect(() =>
      checkTaskCeilings(task({ memory_mb: 256, pids: 50 }), { memory_mb: 1024, pids: 100 }),
    ).not.toThrow();
  });
});
