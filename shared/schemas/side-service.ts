import { z } from "zod";

/**
 * A side service of a session (`runtime.services`, docker backend only): a container started beside
 * the agent's before the harness runs, sharing one loopback with it and nothing else, stopped with
 * the session (docs/runner.md, "Side services"). `polar import-harbor` writes these from a Harbor
 * task's `environment/docker-compose.yaml` (batch-runner/harbor/compose.ts).
 */
export const SERVICE_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

/** Each service's own caps when the task sets none; they do not count against the agent's limits. */
export const SERVICE_DEFAULT_LIMITS = { memory_mb: 512, pids: 256, cpus: 1 } as const;

export const MAX_SERVICES = 8;

const Seconds = z.number().positive().max(3600);

/** An environment variable's name (the service's and the runner's). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const EnvName = z.string().regex(ENV_NAME, "an environment variable name");

/**
 * A value the runner takes from its own environment (compose's `- NAME`, `NAME:`, `${NAME}`,
 * `${NAME:-default}`), passed to this service only when the operator allows the name
 * (`--service-env NAME`); never to the agent. Allowed but unset (or empty) is an error at INIT
 * unless there is a default; not allowed is an error unless there is a default, which is then what
 * the service gets (as compose with the variable unset).
 */
export const FromRunnerEnv = z.strictObject({
  from_env: EnvName,
  default: z.string().optional(),
});
export type FromRunnerEnv = z.infer<typeof FromRunnerEnv>;

export const ServiceHealthcheck = z.strictObject({
  /** argv run in the service's container (`sh -c` for compose's CMD-SHELL); exit 0 is healthy. */
  test: z.array(z.string()).min(1),
  interval_seconds: Seconds.default(30),
  timeout_seconds: Seconds.default(30),
  retries: z.number().int().min(1).max(1000).default(3),
  /** Failures in this window do not count (compose's `start_period`). */
  start_period_seconds: z.number().nonnegative().max(3600).default(0),
});
export type ServiceHealthcheck = z.infer<typeof ServiceHealthcheck>;

export const SideService = z.strictObject({
  /** The host name the agent and the other services reach it by (127.0.0.1: one shared loopback). */
  name: z.string().regex(SERVICE_NAME, "lowercase letters, digits, _ . - (a host name)"),
  /** An image reference, `build:<dir>` (its Dockerfile built as the task's is) or `prebuilt:<image>`. */
  image: z.string().min(1),
  entrypoint: z.array(z.string()).optional(),
  command: z.array(z.string()).optional(),
  env: z.record(EnvName, z.union([z.string(), FromRunnerEnv])).default({}),
  workdir: z.string().startsWith("/").optional(),
  user: z.string().min(1).optional(),
  healthcheck: ServiceHealthcheck.optional(),
  /** Started only once these are healthy (or started, when they have no healthcheck). */
  depends_on: z.array(z.string().regex(SERVICE_NAME)).default([]),
  limits: z
    .strictObject({
      cpus: z.number().positive().optional(),
      memory_mb: z.number().int().positive().optional(),
      pids: z.number().int().positive().optional(),
    })
    .default({}),
});
export type SideService = z.infer<typeof SideService>;

export const SideServices = z
  .array(SideService)
  .max(MAX_SERVICES)
  .superRefine((services, ctx) => {
    const names = new Set<string>();
    for (const s of services) {
      if (names.has(s.name)) ctx.addIssue({ code: "custom", message: `service ${s.name} is named twice` });
      names.add(s.name);
    }
    for (const s of services)
      for (const d of s.depends_on)
        if (!names.has(d) || d === s.name)
          ctx.addIssue({ code: "custom", message: `service ${s.name} depends on ${d}, not another service` });
  })
  .default([]);
