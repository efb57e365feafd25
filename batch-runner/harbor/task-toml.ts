import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join, resolve, sep } from "node:path";
import { z } from "zod";
import { formatIssues } from "../../shared/zod-issues.ts";
import { HarborTaskRefused } from "./harbor-refusal.ts";

/**
 * A Harbor `task.toml` (harbor/models/task/config.py, `TaskConfig`), read with Python's own TOML
 * parser (`tomllib`, Python 3.11+, isolated: `parseToml`) and checked here. The fields Polar maps are in `TaskToml`; the
 * Harbor fields it cannot honour are refused by name with the reason (`UNSUPPORTED`); anything
 * else is an unknown field.
 */
const Env = z.record(z.string(), z.string());
const Seconds = z.number().positive();
/** Harbor's default is "public"; either way the sandbox has none (see `networkWarnings`). */
const Network = z.enum(["public", "no-network"]).optional();
const Empty = z.array(z.never()).optional();
/** Harbor's `ArtifactConfig` or its short form (a path); mapped onto work-dir paths by artifacts.ts. */
const Artifacts = z
  .array(
    z.union([
      z.string().min(1),
      z.strictObject({
        source: z.string().min(1),
        destination: z.string().nullable().optional(),
        exclude: z.array(z.string()).optional(),
        service: z.string().nullable().optional(),
      }),
    ]),
  )
  .optional();
export type ArtifactEntry = NonNullable<z.infer<typeof Artifacts>>[number];
const Healthcheck = z.strictObject({
  command: z.string().min(1),
  interval_sec: Seconds.optional(),
  timeout_sec: Seconds.optional(),
  start_period_sec: z.number().nonnegative().optional(),
  start_interval_sec: Seconds.optional(),
  retries: z.number().int().positive().optional(),
});
/** One `[[steps]]` entry (Harbor's `StepConfig`); its files are under `steps/<name>/` (task-steps.ts). */
const Step = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { message: "a step name is a plain directory name" }),
  agent: z.strictObject({ timeout_sec: Seconds.nullable().optional(), network_mode: Network }).optional(),
  verifier: z
    .strictObject({ timeout_sec: Seconds.optional(), env: Env.optional(), network_mode: Network })
    .optional(),
  min_reward: z
    .union([z.number(), z.record(z.string(), z.number())])
    .nullable()
    .optional(),
  healthcheck: Healthcheck.nullable().optional(),
  artifacts: Artifacts,
});
export type StepToml = z.infer<typeof Step>;

export const TaskToml = z.strictObject({
  schema_version: z.string().optional(),
  /** The older name of `schema_version`; Harbor's `TaskConfig` still maps it. */
  version: z.string().optional(),
  task: z.record(z.string(), z.unknown()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  source: z.string().nullable().optional(),
  artifacts: Artifacts,
  steps: z.array(Step).min(1).nullable().optional(),
  multi_step_reward_strategy: z.enum(["mean", "final"]).nullable().optional(),
  verifier: z
    .strictObject({
      timeout_sec: Seconds.optional(),
      env: Env.optional(),
      // "shared": the tests see what the agent left, which is what Polar's judge gets.
      environment_mode: z.enum(["shared", "separate"]).optional(),
      collect: Empty,
      network_mode: Network,
    })
    .optional(),
  agent: z.strictObject({ timeout_sec: Seconds.nullable().optional(), network_mode: Network }).optional(),
  environment: z
    .strictObject({
      // The image build's time limit (image-build-ref.ts carries it to image-build.ts).
      build_timeout_sec: Seconds.optional(),
      /** A prebuilt image Harbor runs instead of building environment/Dockerfile. */
      docker_image: z.string().min(1).nullable().optional(),
      /** A dir of the image holding skills, copied into the harness's skills dir (skills.ts). */
      skills_dir: z.string().nullable().optional(),
      cpus: z.number().positive().nullable().optional(),
      memory_mb: z.number().int().positive().nullable().optional(),
      // Work dir and home together: runtime.limits.disk_mb, a size-capped volume (docs/security.md).
      storage_mb: z.number().int().positive().nullable().optional(),
      gpus: z.number().int().nonnegative().nullable().optional(),
      workdir: z.string().nullable().optional(),
      env: Env.optional(),
      os: z.literal("linux").optional(),
      allow_internet: z.boolean().nullable().optional(),
      network_mode: Network,
      /** Harbor's `MCPServerConfig`s: become `agent.mcp_servers` (mcp.ts), checked by Polar's schema there. */
      mcp_servers: z.array(z.record(z.string(), z.unknown())).optional(),
    })
    .optional(),
  solution: z.strictObject({ env: Env.optional() }).optional(),
});
export type TaskToml = z.infer<typeof TaskToml>;

const NO_NETWORK = "a Polar sandbox has no network but the model proxy, so no allowlist can be honoured";

/** Harbor fields Polar does not run, dotted path -> why. One list, checked before the schema. */
export const UNSUPPORTED: Record<string, string> = {
  "environment.network_mode": NO_NETWORK,
  "environment.allowed_hosts": NO_NETWORK,
  "environment.healthcheck": "no service is started, so there is nothing to check",
  "environment.gpu_types": "GPU types cannot be requested (runtime.limits.gpus only counts)",
  "environment.tpu": "TPUs cannot be requested",
  "environment.os": "only linux tasks run",
  "agent.user": "the agent always runs as the sandbox's unprivileged user",
  "agent.network_mode": NO_NETWORK,
  "agent.allowed_hosts": NO_NETWORK,
  "verifier.user": "the tests always run as the sandbox's unprivileged user",
  "verifier.environment": "a separate verifier image is not built",
  "verifier.collect": "nothing is collected from services",
  "verifier.network_mode": NO_NETWORK,
  "verifier.allowed_hosts": NO_NETWORK,
};

/** Values Harbor's own `harbor task init` writes that mean "nothing to do", so they are no refusal. */
function isUnset(path: string, value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (Array.isArray(value) && value.length === 0) return true;
  if (path === "environment.os") return value === "linux";
  if (path.endsWith(".network_mode")) return value === "public" || value === "no-network";
  return false;
}

/**
 * Harbor gives tasks the internet unless they say otherwise ("public" is its default and what
 * `harbor task init` writes). A Polar sandbox has none, so such a task is converted with a warning:
 * a test.sh that downloads its tools (curl, apt-get, uv, pip) fails there and scores 0.
 */
export function networkWarnings(toml: TaskToml, tests: string[] = []): string[] {
  const asked = [
    ["environment.network_mode", toml.environment?.network_mode === "public"],
    ["environment.allow_internet", toml.environment?.allow_internet === true],
    ["agent.network_mode", toml.agent?.network_mode === "public"],
    ["verifier.network_mode", toml.verifier?.network_mode === "public"],
  ] as const;
  const warnings = asked
    .filter(([, yes]) => yes)
    .map(
      ([path]) =>
        `task.toml: ${path} asks for the internet; the sandbox has none (only the model proxy); its verifier gets the container engine's network only on a runner started with --allow-verifier-network`,
    );
  const unset =
    toml.environment?.network_mode === undefined &&
    (toml.environment?.allow_internet ?? null) === null &&
    toml.verifier?.network_mode === undefined;
  const installs = tests.map((t) => INSTALLS.exec(t)?.[0]).find((m) => m !== undefined);
  if (unset && installs !== undefined)
    warnings.push(
      `task.toml: no network setting (Harbor's default is the internet) and the tests download tools (${JSON.stringify(installs.trim())}); the sandbox has none, so they fail there and even a solved task scores 0 unless the image already holds them or the runner runs with --allow-verifier-network`,
    );
  return warnings;
}

/** A test script fetching its tools when it runs (package managers, installers piped to a shell). */
const INSTALLS =
  /\b(?:apt-get|apt|apk|dnf|yum)\s+(?:-\S+\s+)*install\b|\b(?:pip3?|uv pip|npm|pnpm|gem|cargo)\s+install\b|\buvx\s|\b(?:curl|wget)\s[^\n|]*\|\s*(?:ba)?sh\b/;

function at(data: Record<string, unknown>, path: string): unknown {
  return path
    .split(".")
    .reduce<unknown>(
      (v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined),
      data,
    );
}

/**
 * TOML text -> JSON with Python's tomllib, running nothing of the collection's or the caller's:
 * the text goes in on stdin (Python opens no path of the task), `-I -S` keeps the cwd, the script's
 * dir, PYTHON* variables and site-packages off sys.path (a `json.py` or `tomllib.py` beside the task
 * is never imported), the cwd is `/`, and `python3` is looked up only in absolute PATH entries
 * outside `taskDir` (a `.` entry would run the collection's own `python3`).
 */
export function parseToml(text: string, taskDir?: string): unknown {
  const python = hostPython3(taskDir);
  if (python === null)
    throw new HarborTaskRefused(
      "task.toml: no python3 on PATH (absolute entries only); import-harbor reads TOML with Python 3.11+'s tomllib",
    );
  const code = "import json, sys, tomllib\nprint(json.dumps(tomllib.loads(sys.stdin.read())))";
  const res = spawnSync(python, ["-I", "-S", "-c", code], {
    input: text,
    cwd: "/",
    encoding: "utf8",
    timeout: 30_000,
  });
  if (res.error)
    throw new HarborTaskRefused(
      `task.toml: cannot run ${python} to read it (${res.error.message}); import-harbor reads TOML with Python 3.11+'s tomllib`,
    );
  if (res.status !== 0) {
    const last = res.stderr.trim().split("\n").pop() ?? "";
    if (last.includes("No module named 'tomllib'"))
      throw new HarborTaskRefused(`task.toml: ${python} has no tomllib; import-harbor needs Python 3.11+`);
    throw new HarborTaskRefused(`task.toml: not valid TOML: ${last}`);
  }
  return JSON.parse(res.stdout);
}

function hostPython3(taskDir: string | undefined): string | null {
  const inside = taskDir ? resolve(taskDir) : null;
  for (const entry of (process.env.PATH ?? "").split(delimiter)) {
    if (!isAbsolute(entry)) continue;
    if (inside && (entry === inside || entry.startsWith(`${inside}${sep}`))) continue;
    const path = join(entry, "python3");
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

export function checkTaskToml(data: unknown): TaskToml {
  if (data && typeof data === "object") {
    for (const [path, why] of Object.entries(UNSUPPORTED)) {
      const value = at(data as Record<string, unknown>, path);
      if (!isUnset(path, value))
        throw new HarborTaskRefused(`task.toml: ${path} = ${JSON.stringify(value)}: ${why}`);
    }
  }
  const parsed = TaskToml.safeParse(data);
  if (!parsed.success) throw new HarborTaskRefused(`task.toml: ${formatIssues(parsed.error)}`);
  // As Harbor's `handle_version_rename`: `version` counts only where schema_version is unset.
  const { version, ...toml } = parsed.data;
  return { ...toml, schema_version: toml.schema_version ?? version };
}
