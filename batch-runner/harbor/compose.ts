import { posix } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import {
  type FromRunnerEnv,
  SERVICE_NAME,
  type SideService,
  SideServices,
} from "../../shared/schemas/side-service.ts";
import { formatIssues } from "../../shared/zod-issues.ts";
import { BUILD_PREFIX, buildContextOf, prebuiltImageOf } from "../runtime/image-build-ref.ts";
import { BRIDGE_PORT, JUDGE_BRIDGE_PORT } from "../runtime/socket-bridge.ts";

const isBridgePort = (port: number) => port === BRIDGE_PORT || port === JUDGE_BRIDGE_PORT;

import { HarborTaskRefused } from "./harbor-refusal.ts";
import { entryKind, readTaskFile } from "./task-files.ts";

/**
 * A Harbor task's `environment/docker-compose.yaml` (merged by Harbor over its own base file, whose
 * `main` service is the agent's container) -> `runtime.services`. Each other service runs beside the
 * agent's container on one loopback they share and nothing else (docs/runner.md, "Side services"), so
 * what would reach past it (published ports, host volumes, host or other networks, devices,
 * privileges) is refused by name with the reason (`REFUSED`); any other unknown key is refused by
 * the strict schema. A service's environment value taken from the runner's environment (`- NAME`,
 * `NAME:`, `${NAME}`, `${NAME:-default}`) becomes a `{ from_env }` reference, which the runner fills
 * only for names its operator allows (`--service-env`); `$VARIABLE` anywhere else is refused.
 */
export const COMPOSE_FILE = "environment/docker-compose.yaml";

const NO_NET = "the services share one loopback with the agent and have no other network";
/** Compose service keys Polar does not honour, key -> why. One list, checked before the schema. */
export const REFUSED: Record<string, string> = {
  ports: `ports are not published to the host (${NO_NET}; reach the service by its name)`,
  network_mode: NO_NET,
  networks: NO_NET,
  extra_hosts: NO_NET,
  dns: NO_NET,
  links: NO_NET,
  external_links: NO_NET,
  volumes: "volumes are not mounted (no host path or shared volume reaches a service)",
  volumes_from: "volumes are not mounted",
  tmpfs: "volumes are not mounted",
  privileged: "services run unprivileged",
  cap_add: "services get no extra capabilities",
  security_opt: "services run with the engine's default security options",
  devices: "no device reaches a service",
  device_cgroup_rules: "no device reaches a service",
  gpus: "no GPU reaches a service",
  pid: "services have their own process namespace",
  ipc: "services have their own IPC namespace",
  userns_mode: "services run in the engine's default user namespace",
  cgroup_parent: "services run in the engine's cgroups",
  sysctls: "sysctls are not set",
  env_file: "env files are read from the runner's host; set environment: in the compose file",
  secrets: "secrets are not passed",
  configs: "configs are not passed",
  container_name: "container names are the runner's (one set per session)",
  profiles: "profiles are not selected",
  extends: "extends is not followed",
  platform: "the node's platform only",
  runtime: "the runner's OCI runtime only",
  restart: "a service is not restarted (one that exits ends its session at start)",
};

const TOP_REFUSED: Record<string, string> = {
  volumes: REFUSED.volumes,
  networks: NO_NET,
  secrets: REFUSED.secrets,
  configs: REFUSED.configs,
  include: "included compose files are not read",
};

/** `2s`, `1m30s`, `500ms`, `1h` (compose durations) -> seconds. */
export function durationSeconds(text: string): number | null {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|us|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) return null;
  const unit = { us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 } as const;
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2] as keyof typeof unit], 0);
}

const Duration = z.string().transform((s, ctx) => {
  const v = durationSeconds(s);
  if (v === null)
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(s)} is not a duration (2s, 1m30s)` });
  return v ?? 0;
});
/** A compose command: a list, or a string split on spaces (a quoted one is refused rather than guessed). */
const Argv = z.union([
  z.array(z.string()),
  z.string().transform((s, ctx) => {
    if (/["'\\$`]/.test(s))
      ctx.addIssue({ code: "custom", message: "a command string with quotes or $: write it as a list" });
    return s.split(/\s+/).filter((w) => w !== "");
  }),
]);
const Memory = z.union([z.number().int().positive(), z.string()]).transform((v, ctx) => {
  const m = typeof v === "number" ? [String(v), "b"] : /^(\d+)\s*([bkmg])?b?$/i.exec(v)?.slice(1);
  if (!m) {
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(v)} is not a memory size (512m, 1g)` });
    return 0;
  }
  const scale =
    { b: 1 / 2 ** 20, k: 1 / 1024, m: 1, g: 1024 }[(m[1] ? (m[1] as string) : "b").toLowerCase()] ?? 1;
  return Math.max(1, Math.ceil(Number(m[0]) * scale));
});
const Cpus = z.union([
  z.number().positive(),
  z
    .string()
    .regex(/^\d+(\.\d+)?$/)
    .transform(Number),
]);
const Condition = z.enum(["service_started", "service_healthy"]);
const DependsOn = z.union([
  z.array(z.string()),
  z.record(
    z.string(),
    z.strictObject({ condition: Condition.default("service_started"), required: z.boolean().optional() }),
  ),
]);

const Healthcheck = z.strictObject({
  test: z.union([z.array(z.string()).min(1), z.string().min(1)]),
  interval: Duration.optional(),
  timeout: Duration.optional(),
  retries: z.number().int().positive().optional(),
  start_period: Duration.optional(),
  start_interval: Duration.optional(),
  disable: z.boolean().optional(),
});

const Environment = z.union([
  z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).nullable()),
  z.array(z.string()),
]);

const Service = z.strictObject({
  image: z.string().min(1).optional(),
  build: z
    .union([
      z.string().min(1),
      z.strictObject({ context: z.string().min(1), dockerfile: z.literal("Dockerfile").optional() }),
    ])
    .optional(),
  command: Argv.optional(),
  entrypoint: Argv.optional(),
  environment: Environment.optional(),
  working_dir: z.string().startsWith("/").optional(),
  user: z.union([z.string().min(1), z.number().int().nonnegative()]).optional(),
  healthcheck: Healthcheck.optional(),
  depends_on: DependsOn.optional(),
  /** Documentation in compose: nothing is published, the loopback is shared. */
  expose: z.array(z.union([z.string(), z.number()])).optional(),
  mem_limit: Memory.optional(),
  cpus: Cpus.optional(),
  pids_limit: z.number().int().positive().optional(),
  deploy: z
    .strictObject({
      resources: z
        .strictObject({
          limits: z
            .strictObject({
              cpus: Cpus.optional(),
              memory: Memory.optional(),
              pids: z.number().int().positive().optional(),
            })
            .optional(),
        })
        .optional(),
    })
    .optional(),
  init: z.boolean().optional(),
  stop_grace_period: Duration.optional(),
  labels: z.union([z.record(z.string(), z.string()), z.array(z.string())]).optional(),
});
type Service = z.infer<typeof Service>;

/** The agent's container: Harbor configures it from task.toml and the Dockerfile; only its wait on the services is read. */
const Main = z.strictObject({ depends_on: DependsOn.optional() });

/** Where compose would fill a value from the runner's environment. */
const INTERPOLATION = /\$\{?[A-Za-z_]/;
/** A service's `environment`: its values are read by `envValue`, not refused here. */
const SERVICE_ENV = /^services\..+\.environment$/;

/**
 * Every string of the file with compose's `$$` read as `$`; a `$VAR` or `${VAR}` outside a
 * service's environment values is refused where it is (the runner's environment reaches a service
 * only through `--service-env`, and nothing else of the file).
 */
function uninterpolated(value: unknown, path: string): unknown {
  if (SERVICE_ENV.test(path)) return value;
  if (typeof value === "string") {
    if (INTERPOLATION.test(value.replaceAll("$$", "")))
      refuse(
        path || "the file",
        "$VARIABLE is filled from the runner's environment, which reaches only a service's environment values (write $$ for a literal $)",
      );
    return value.replaceAll("$$", "$");
  }
  if (Array.isArray(value)) return value.map((v, i) => uninterpolated(v, `${path}[${i}]`));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, uninterpolated(v, path ? `${path}.${k}` : k)]),
    );
  return value;
}

const VAR = "[A-Za-z_][A-Za-z0-9_]*";
/** A whole value that is one variable: `$NAME`, `${NAME}`, `${NAME<op><arg>}` (compose's forms). */
const WHOLE_VAR = new RegExp(`^\\$(?:(${VAR})|\\{(${VAR})(?:(:?[-?+])([^}]*))?\\})$`);

/** A compose environment value -> a literal, or a reference to the runner's environment. */
function envValue(raw: string, where: string): string | FromRunnerEnv {
  if (!INTERPOLATION.test(raw.replaceAll("$$", ""))) return raw.replaceAll("$$", "$");
  const m = WHOLE_VAR.exec(raw);
  if (!m)
    return refuse(
      where,
      "a value mixing text and $VARIABLE: only a whole value is taken from the runner's environment (write it as $NAME alone, or $$ for a literal $)",
    );
  const name = (m[1] ?? m[2]) as string;
  const [op, arg = ""] = [m[3], m[4]];
  // `${NAME?err}` / `${NAME:?err}`: required, which a reference is (unset ends the session at INIT).
  if (op === undefined || op === "?" || op === ":?") return { from_env: name };
  if (op === ":-") {
    if (INTERPOLATION.test(arg.replaceAll("$$", "")))
      refuse(where, "a default naming another $VARIABLE is not read");
    return { from_env: name, default: arg.replaceAll("$$", "$") };
  }
  return refuse(
    where,
    op === "-"
      ? `\${${name}-...} (its default only when unset, not when empty) is not read: write \${${name}:-...}`
      : `\${${name}${op}...} (a value only when the variable is set) is not read`,
  );
}

function refuse(where: string, why: string): never {
  throw new HarborTaskRefused(`${COMPOSE_FILE}: ${where}: ${why}`);
}

function envOf(name: string, env: Service["environment"]): SideService["env"] {
  if (env === undefined) return {};
  const pairs = Array.isArray(env)
    ? env.map((e): [string, string | null] => {
        const at = e.indexOf("=");
        return at < 0 ? [e, null] : [e.slice(0, at), e.slice(at + 1)];
      })
    : Object.entries(env).map(([k, v]): [string, string | null] => [k, v === null ? null : String(v)]);
  const out: SideService["env"] = {};
  for (const [k, v] of pairs) {
    const where = `services.${name}.environment.${k}`;
    // `- NAME` and `NAME:` with no value: compose takes the runner's NAME.
    out[k] = v === null ? { from_env: k } : envValue(v, where);
  }
  return out;
}

/** Names that say a service talks to something on the internet (an API's key, token, endpoint). */
const INTERNET_HINT = /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|_URL$|_ENDPOINT$|_HOST$/i;

/**
 * The import's warnings for services taking values from the runner's environment: which variable,
 * the switch that passes it, what happens without it, and that a service that evidently calls out
 * (it takes an API key) has no network here.
 */
export function serviceEnvWarnings(services: SideService[]): string[] {
  const out: string[] = [];
  for (const s of services) {
    const refs = Object.entries(s.env).filter((e): e is [string, FromRunnerEnv] => typeof e[1] !== "string");
    for (const [key, ref] of refs)
      out.push(
        `${COMPOSE_FILE}: services.${s.name}.environment.${key} is taken from the runner's environment (${ref.from_env}): ` +
          `it reaches this service only on a runner started with --service-env ${ref.from_env}` +
          (ref.default === undefined
            ? "; without it, or with it unset there, the session ends ERROR at INIT naming it"
            : `; otherwise the service gets its default ${JSON.stringify(ref.default)}`),
      );
    const online = refs.map(([, r]) => r.from_env).filter((n) => INTERNET_HINT.test(n));
    if (online.length)
      out.push(
        `${COMPOSE_FILE}: services.${s.name} takes ${online.join(", ")}, evidently to call a service on the internet: it has no network here (only the loopback it shares with the agent), so those calls will fail`,
      );
  }
  return out;
}

async function imageOf(taskDir: string, name: string, s: Service): Promise<string> {
  if (s.build !== undefined) {
    const context = typeof s.build === "string" ? s.build : s.build.context;
    const rel = posix.normalize(posix.join("environment", context));
    if (posix.isAbsolute(context) || !rel.startsWith("environment/") || rel === "environment/..")
      refuse(
        `services.${name}.build`,
        `the context ${JSON.stringify(context)} is not a directory inside environment/`,
      );
    if ((await entryKind(taskDir, rel)) !== "dir")
      refuse(`services.${name}.build`, `${rel} is not a directory`);
    if ((await entryKind(taskDir, `${rel}/Dockerfile`)) !== "file")
      refuse(`services.${name}.build`, `${rel}/Dockerfile is missing`);
    return `${BUILD_PREFIX}${posix.join(taskDir, rel)}`;
  }
  if (s.image !== undefined) {
    // The runner's own build references: `build:/etc` would build any host dir the runner may build
    // (only its POLAR_BUILD_DIRS stopped it), bypassing the context rule above.
    if (buildContextOf(s.image) !== null || prebuiltImageOf(s.image) !== null)
      refuse(
        `services.${name}.image`,
        `${JSON.stringify(s.image)} is one of Polar's build references, not an image: build a service with build: and a context inside environment/`,
      );
    return s.image;
  }
  return refuse(`services.${name}`, "neither build nor image");
}

function healthOf(h: Service["healthcheck"]): SideService["healthcheck"] {
  if (h === undefined || h.disable === true) return undefined;
  const test = typeof h.test === "string" ? ["CMD-SHELL", h.test] : h.test;
  const [kind, ...rest] = test;
  if (kind === "NONE") return undefined;
  const argv = kind === "CMD" ? rest : kind === "CMD-SHELL" ? ["sh", "-c", rest.join(" ")] : null;
  if (argv === null || argv.length === 0)
    throw new Error(`healthcheck.test starts with ${JSON.stringify(kind)}, not CMD, CMD-SHELL or NONE`);
  return {
    test: argv,
    interval_seconds: h.interval || 30,
    timeout_seconds: h.timeout || 30,
    retries: h.retries ?? 3,
    start_period_seconds: h.start_period ?? 0,
  };
}

function dependsOn(d: z.infer<typeof DependsOn> | undefined): string[] {
  if (d === undefined) return [];
  return Array.isArray(d) ? d : Object.keys(d);
}

/**
 * The side services of the task at `taskDir` (absolute), or [] when it has no compose file.
 * Services are built from their own context under environment/ (`build:`) or run from their image.
 */
export async function readComposeServices(taskDir: string): Promise<SideService[]> {
  const bytes = await readTaskFile(taskDir, COMPOSE_FILE);
  if (bytes === null) return [];
  let doc: unknown;
  try {
    doc = parseYaml(bytes.toString("utf8"), { maxAliasCount: 0, merge: false });
  } catch (err) {
    return refuse("not valid YAML", (err as Error).message.split("\n")[0] ?? "");
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc))
    return refuse("the file", "not a mapping");
  doc = uninterpolated(doc, "");
  const top = doc as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (Object.hasOwn(TOP_REFUSED, key)) refuse(key, TOP_REFUSED[key] as string);
    if (!["services", "version", "name"].includes(key)) refuse(key, "not a compose key Polar reads");
  }
  const services = top.services;
  if (services === null || typeof services !== "object" || Array.isArray(services))
    return refuse("services", "not a mapping of services");
  const out: SideService[] = [];
  for (const [name, raw] of Object.entries(services as Record<string, unknown>)) {
    if (raw !== null && typeof raw === "object" && !Array.isArray(raw))
      for (const key of Object.keys(raw))
        if (Object.hasOwn(REFUSED, key)) refuse(`services.${name}.${key}`, REFUSED[key] as string);
    if (name === "main") {
      const main = Main.safeParse(raw ?? {});
      if (!main.success)
        refuse(
          "services.main",
          `${formatIssues(main.error)} (the agent's container is set up from task.toml and environment/Dockerfile)`,
        );
      continue;
    }
    if (!SERVICE_NAME.test(name))
      refuse(`services.${name}`, "a service name is a host name: lowercase letters, digits, _ . -");
    const parsed = Service.safeParse(raw);
    if (!parsed.success) refuse(`services.${name}`, formatIssues(parsed.error));
    const s = parsed.data;
    let healthcheck: SideService["healthcheck"];
    try {
      healthcheck = healthOf(s.healthcheck);
    } catch (err) {
      refuse(`services.${name}`, (err as Error).message);
    }
    const taken = (s.expose ?? []).map((p) => Number(String(p).split("/")[0])).find(isBridgePort);
    if (taken !== undefined)
      refuse(
        `services.${name}.expose`,
        `port ${taken} of the shared loopback is Polar's (the sandbox's proxy bridge: ${BRIDGE_PORT} and ${JUDGE_BRIDGE_PORT})`,
      );
    const limits = s.deploy?.resources?.limits;
    out.push({
      name,
      image: await imageOf(taskDir, name, s),
      ...(s.entrypoint ? { entrypoint: s.entrypoint } : {}),
      ...(s.command ? { command: s.command } : {}),
      env: envOf(name, s.environment),
      ...(s.working_dir ? { workdir: s.working_dir } : {}),
      ...(s.user !== undefined ? { user: String(s.user) } : {}),
      ...(healthcheck ? { healthcheck } : {}),
      depends_on: dependsOn(s.depends_on).filter((d) => d !== "main"),
      limits: {
        ...((s.cpus ?? limits?.cpus) ? { cpus: s.cpus ?? limits?.cpus } : {}),
        ...((s.mem_limit ?? limits?.memory) ? { memory_mb: s.mem_limit ?? limits?.memory } : {}),
        ...((s.pids_limit ?? limits?.pids) ? { pids: s.pids_limit ?? limits?.pids } : {}),
      },
    });
  }
  const checked = SideServices.safeParse(out);
  if (!checked.success) refuse("services", formatIssues(checked.error));
  return checked.data;
}

/** `{ services }` for the task's `runtime` when it has any, else nothing (tasks without stay as they were). */
export async function composeServicesField(taskDir: string): Promise<{ services?: SideService[] }> {
  const services = await readComposeServices(taskDir);
  return services.length ? { services } : {};
}
