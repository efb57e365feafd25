/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: compose's own interpolation syntax */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readComposeServices, serviceEnvWarnings } from "../../batch-runner/harbor/compose.ts";
import { HarborTaskRefused } from "../../batch-runner/harbor/harbor-refusal.ts";
import { RuntimeSpecRefused } from "../../batch-runner/runtime/runtime-spec-refused.ts";
import {
  checkServiceEnv,
  redactValues,
  runnerValues,
  serviceEnvOf,
} from "../../batch-runner/runtime/service-env.ts";
import { serviceEnvFlag } from "../../cli/flags.ts";
import { SideService } from "../../shared/schemas/side-service.ts";

/**
 * A compose environment value taken from the runner's environment becomes a `{ from_env }`
 * reference at import, and reaches the service only for names the operator allows (`--service-env`).
 */
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-service-env-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function envOfCompose(environment: string): Promise<SideService["env"]> {
  const t = await mkdtemp(join(dir, "t-"));
  await mkdir(join(t, "environment", "api"), { recursive: true });
  await writeFile(join(t, "environment", "api", "Dockerfile"), "FROM x\n");
  await writeFile(
    join(t, "environment", "docker-compose.yaml"),
    `services:\n  api:\n    build: ./api\n    environment:\n${environment}`,
  );
  const [api] = await readComposeServices(t);
  return (api as SideService).env;
}

async function refusalOf(environment: string): Promise<string> {
  const err = await envOfCompose(environment).catch((e) => e);
  expect(err).toBeInstanceOf(HarborTaskRefused);
  return (err as Error).message;
}

describe("compose environment -> runtime.services env", () => {
  it.each([
    ["a list entry without =", "      - API_KEY\n", { API_KEY: { from_env: "API_KEY" } }],
    ["a mapping key without a value", "      API_KEY:\n", { API_KEY: { from_env: "API_KEY" } }],
    ["$NAME", "      - KEY=$API_KEY\n", { KEY: { from_env: "API_KEY" } }],
    ["${NAME}", "      - KEY=${API_KEY}\n", { KEY: { from_env: "API_KEY" } }],
    ["${NAME} in a mapping", '      KEY: "${API_KEY}"\n', { KEY: { from_env: "API_KEY" } }],
    ["${NAME:?message} (required)", "      - KEY=${API_KEY:?set it}\n", { KEY: { from_env: "API_KEY" } }],
    ["${NAME?message} (required)", "      - KEY=${API_KEY?set it}\n", { KEY: { from_env: "API_KEY" } }],
    [
      "${NAME:-default}",
      "      - MODEL=${SIM_MODEL:-claude}\n",
      { MODEL: { from_env: "SIM_MODEL", default: "claude" } },
    ],
    [
      "${NAME:-} (an empty default)",
      "      - MODEL=${SIM_MODEL:-}\n",
      { MODEL: { from_env: "SIM_MODEL", default: "" } },
    ],
    [
      "$$ in a default and literals",
      "      - P=${PRICE:-$$5}\n      - LIT=cost $$5\n      - N=3\n",
      { P: { from_env: "PRICE", default: "$5" }, LIT: "cost $5", N: "3" },
    ],
    ["a number in a mapping", "      PORT: 8000\n", { PORT: "8000" }],
  ])("reads %s", async (_what, environment, env) => {
    expect(await envOfCompose(environment)).toEqual(env);
  });

  it.each([
    ["text around a variable", "      - AUTH=Bearer ${TOKEN}\n", /AUTH: a value mixing text and \$VARIABLE/],
    ["two variables", "      - URL=$HOST$PATH\n", /URL: a value mixing text/],
    ["a default naming a variable", "      - A=${A:-$B}\n", /A: a default naming another \$VARIABLE/],
    [
      "${NAME-default}",
      "      - A=${A-x}\n",
      /A: \$\{A-\.\.\.\} \(its default only when unset.*write \$\{A:-\.\.\.\}/,
    ],
    ["${NAME:+alt}", "      - A=${A:+x}\n", /A: \$\{A:\+\.\.\.\} .* is not read/],
  ])("refuses %s by name", async (_what, environment, why) => {
    expect(await refusalOf(environment)).toMatch(why);
  });

  it("still refuses $VARIABLE outside a service's environment values", async () => {
    const t = await mkdtemp(join(dir, "t-"));
    await mkdir(join(t, "environment"), { recursive: true });
    await writeFile(
      join(t, "environment", "docker-compose.yaml"),
      "services:\n  api:\n    image: ${IMAGE}\n",
    );
    const err = await readComposeServices(t).catch((e) => e);
    expect(err.message).toMatch(/services\.api\.image: \$VARIABLE is filled from the runner's environment/);
  });
});

describe("SideService env schema", () => {
  const base = { name: "api", image: "x" };
  it.each([
    ["an unknown key beside from_env", { K: { from_env: "A", secret: "v" } }],
    ["a from_env that is not a variable name", { K: { from_env: "A-B" } }],
    ["an empty from_env", { K: { from_env: "" } }],
    ["a default that is not a string", { K: { from_env: "A", default: 5 } }],
    ["a number value", { K: 5 }],
    ["an env key that is not a name", { "K=1": "v" }],
  ])("refuses %s", (_what, env) => {
    expect(SideService.safeParse({ ...base, env }).success).toBe(false);
  });
  it("takes a literal and a reference", () => {
    const env = { A: "lit", B: { from_env: "B" }, C: { from_env: "X", default: "" } };
    expect(SideService.parse({ ...base, env }).env).toEqual(env);
  });
});

describe("serviceEnvOf (run time)", () => {
  const svc = SideService.parse({
    name: "api",
    image: "x",
    env: { MODE: "test", KEY: { from_env: "API_KEY" }, MODEL: { from_env: "SIM_MODEL", default: "small" } },
  });
  const runnerEnv = { API_KEY: "s3cret", SIM_MODEL: "big", OTHER: "x" };

  it("fills an allowed, set name; the default stands for a name not allowed", () => {
    expect(serviceEnvOf(svc, ["API_KEY"], runnerEnv)).toEqual({
      MODE: "test",
      KEY: "s3cret",
      MODEL: "small",
    });
    expect(serviceEnvOf(svc, ["API_KEY", "SIM_MODEL", "OTHER"], runnerEnv)).toEqual({
      MODE: "test",
      KEY: "s3cret",
      MODEL: "big",
    });
  });

  it("refuses a name not allowed, naming it and the switch", () => {
    expect(() => serviceEnvOf(svc, [], runnerEnv)).toThrow(RuntimeSpecRefused);
    expect(() => serviceEnvOf(svc, ["SIM_MODEL"], runnerEnv)).toThrow(
      "runtime.services api: env KEY takes API_KEY from the runner's environment, which this runner does not pass to services (start it with --service-env API_KEY)",
    );
  });

  it("refuses an allowed name that is unset or empty (never a silent empty value)", () => {
    for (const env of [{}, { API_KEY: "" }])
      expect(() => checkServiceEnv([svc], ["API_KEY"], env)).toThrow(
        /env KEY takes API_KEY .* which --service-env allows but does not set/,
      );
    // An empty value with a default: the default (compose's `:-`).
    expect(serviceEnvOf(svc, ["API_KEY", "SIM_MODEL"], { API_KEY: "k", SIM_MODEL: "" }).MODEL).toBe("small");
  });
});

describe("a service's output bound for a session's error", () => {
  it("carries none of the values taken from the runner's environment", () => {
    const svc = SideService.parse({
      name: "api",
      image: "x",
      env: {
        KEY: { from_env: "API_KEY" },
        T: { from_env: "TOKEN" },
        LIT: "visible",
        D: { from_env: "D", default: "dflt" },
      },
    });
    const env = { API_KEY: "sk-abc", TOKEN: "sk-abcdef", D: "", OTHER: "other" };
    const values = runnerValues([svc], ["API_KEY", "TOKEN", "D"], env);
    expect(values).toEqual(
      new Map([
        ["sk-abc", "API_KEY"],
        ["sk-abcdef", "TOKEN"],
      ]),
    );
    expect(redactValues("key=sk-abc token=sk-abcdef visible dflt other", values)).toBe(
      "key=[API_KEY: redacted] token=[TOKEN: redacted] visible dflt other",
    );
    // A name the operator did not allow was never passed: nothing of it to hide.
    expect(runnerValues([svc], ["API_KEY"], env).has("sk-abcdef")).toBe(false);
  });
});

describe("import warnings", () => {
  it("name the variable and the switch, and say the service has no internet here", () => {
    const services = [
      SideService.parse({
        name: "user-server",
        image: "x",
        env: { ANTHROPIC_API_KEY: { from_env: "ANTHROPIC_API_KEY" }, M: { from_env: "M", default: "" } },
      }),
      SideService.parse({ name: "db", image: "x", env: { MODE: "test" } }),
    ];
    const w = serviceEnvWarnings(services);
    expect(w).toHaveLength(3);
    expect(w[0]).toMatch(
      /services\.user-server\.environment\.ANTHROPIC_API_KEY is taken from the runner's environment .*--service-env ANTHROPIC_API_KEY; without it, .* ERROR at INIT/,
    );
    expect(w[1]).toMatch(/--service-env M; otherwise the service gets its default ""/);
    expect(w[2]).toMatch(
      /services\.user-server takes ANTHROPIC_API_KEY, evidently .* it has no network here/,
    );
  });
});

describe("--service-env", () => {
  it("takes comma lists and repeats; refuses a bad name and Polar's own variables", () => {
    expect(serviceEnvFlag(undefined)).toBeUndefined();
    expect(serviceEnvFlag(["A,B", "C", "A"])).toEqual(["A", "B", "C"]);
    expect(() => serviceEnvFlag(["A-B"])).toThrow(/"A-B" is not an environment variable name/);
    expect(() => serviceEnvFlag(["A,"])).toThrow(/"" is not/);
    expect(() => serviceEnvFlag(["POLAR_SIGNING_KEY"])).toThrow(/Polar's own setting/);
  });
});

describe("SideServices hands a service its env through a file, never the engine CLI's own environment", () => {
  it("keeps a task's CONTAINERS_CONF, DOCKER_HOST, PATH away from the engine, and the secret out of argv", async () => {
    const { SideServices } = await import("../../batch-runner/runtime/side-services.ts");
    const root = await mkdtemp(join(dir, "engine-"));
    const calls = join(root, "calls");
    // A stand-in engine binary (a real process): records its argv, its environment and the env file it was given.
    const bin = join(root, "fake-podman");
    await writeFile(
      bin,
      `#!/bin/bash
n=$(date +%s%N)
printf '%s\\n' "$@" > "${calls}.$n.argv"
env > "${calls}.$n.env"
while [ $# -gt 0 ]; do
  if [ "$1" = --env-file ]; then cp "$2" "${calls}.$n.file"; ls -l "$2" | cut -c1-10 > "${calls}.$n.mode"; fi
  shift
done
echo true
`,
      { mode: 0o755 },
    );
    const svc = SideService.parse({
      name: "api",
      image: "localhost/x",
      env: {
        CONTAINERS_CONF: "/srv/tasks/t/environment/evil.conf",
        DOCKER_HOST: "tcp://203.0.113.1:2375",
        PATH: "/nowhere",
        KEY: { from_env: "SVC_SECRET" },
      },
    });
    const secret = `secret-${Date.now()}`;
    process.env.SVC_SECRET = secret;
    try {
      const services = new SideServices(
        { bin, kind: "podman", globalFlags: [], runFlags: [] },
        "polar-t",
        [svc],
        ["SVC_SECRET"],
      );
      await services.start({ sessionRoot: root, holderImage: "localhost/x", build: {} as never });
    } finally {
      delete process.env.SVC_SECRET;
    }
    const { readdir, readFile } = await import("node:fs/promises");
    const files = await readdir(root);
    const envs = await Promise.all(
      files
        .filter((f) => f.endsWith(".env") && f.startsWith("calls."))
        .map((f) => readFile(join(root, f), "utf8")),
    );
    const argvs = await Promise.all(
      files.filter((f) => f.endsWith(".argv")).map((f) => readFile(join(root, f), "utf8")),
    );
    expect(envs.length).toBeGreaterThanOrEqual(3);
    for (const e of envs) {
      expect(e).not.toMatch(/^(CONTAINERS_CONF|DOCKER_HOST|KEY)=/m);
      expect(e).toContain(`PATH=${process.env.PATH}`);
      expect(e).not.toContain(secret);
    }
    for (const a of argvs) expect(a).not.toContain(secret);
    const [given] = await Promise.all(
      files.filter((f) => f.endsWith(".file")).map((f) => readFile(join(root, f), "utf8")),
    );
    expect(given).toBe(
      `CONTAINERS_CONF=/srv/tasks/t/environment/evil.conf\nDOCKER_HOST=tcp://203.0.113.1:2375\nPATH=/nowhere\nKEY=${secret}\n`,
    );
    const [mode] = await Promise.all(
      files.filter((f) => f.endsWith(".mode")).map((f) => readFile(join(root, f), "utf8")),
    );
    expect(mode?.trim()).toBe("-rw-------");
    // Removed once the service's `run` returned.
    expect(files.filter((f) => f.startsWith("service-"))).toEqual([]);
  });
});
