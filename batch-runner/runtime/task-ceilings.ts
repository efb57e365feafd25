import type { ProxyLimits } from "../../shared/schemas/proxy-limits.ts";
import { SERVICE_DEFAULT_LIMITS, type SideService } from "../../shared/schemas/side-service.ts";
import type { SessionLimits } from "./limits.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";

/**
 * What an operator lets a task ask for at most. A task reaches the runner from whoever holds a
 * submit path (the control API's token, a trainer plug-in's dataset row, a NeMo Gym row): its
 * `runtime.limits`, `agent.proxy_limits` and `timeout_seconds` win over the runner's defaults, so
 * without a ceiling any of them could give one session the whole node (docs/security.md).
 */
export const CEILING_FIELDS = {
  memory_mb: "runtime.limits.memory_mb",
  pids: "runtime.limits.pids",
  disk_mb: "runtime.limits.disk_mb",
  output_mb: "runtime.limits.output_mb",
  cpus: "runtime.limits.cpus",
  gpus: "runtime.limits.gpus",
  max_in_flight: "agent.proxy_limits.max_in_flight",
  tokens_per_minute: "agent.proxy_limits.tokens_per_minute",
  timeout_seconds: "timeout_seconds",
  /** A stepped task's steps (a multi-step Harbor task): each runs the harness and a judge runtime. */
  steps: "evaluator.config.steps",
} as const;
export type CeilingName = keyof typeof CEILING_FIELDS;
export type TaskCeilings = Partial<Record<CeilingName, number>>;

/** `memory_mb=8192,max_in_flight=32` (the `--max-task-limits` flag) as ceilings; a bad entry throws naming it. */
export function parseTaskCeilings(text: string): TaskCeilings {
  const out: TaskCeilings = {};
  for (const entry of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value, ...rest] = entry.split("=");
    if (!(name in CEILING_FIELDS) || value === undefined || rest.length > 0) {
      throw new Error(
        `--max-task-limits: ${JSON.stringify(entry)} is not NAME=N with NAME one of ${Object.keys(CEILING_FIELDS).join(", ")}`,
      );
    }
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`--max-task-limits: ${name} must be a positive number`);
    out[name as CeilingName] = n;
  }
  return out;
}

/** Refuses a task that asks for more than a ceiling, naming the field, its value and the ceiling. */
export function checkTaskCeilings(
  task: {
    timeout_seconds: number;
    runtime: { limits: SessionLimits; services?: SideService[] };
    agent: { proxy_limits?: ProxyLimits };
    evaluator?: { config: Record<string, unknown> };
  },
  ceilings: TaskCeilings | undefined,
): void {
  if (!ceilings) return;
  const steps = task.evaluator?.config.steps;
  const asked: Record<CeilingName, number | undefined> = {
    memory_mb: task.runtime.limits.memory_mb,
    pids: task.runtime.limits.pids,
    disk_mb: task.runtime.limits.disk_mb,
    output_mb: task.runtime.limits.output_mb,
    cpus: task.runtime.limits.cpus,
    gpus: task.runtime.limits.gpus,
    max_in_flight: task.agent.proxy_limits?.max_in_flight,
    tokens_per_minute: task.agent.proxy_limits?.tokens_per_minute,
    timeout_seconds: task.timeout_seconds,
    steps: Array.isArray(steps) ? steps.length : undefined,
  };
  for (const [name, ceiling] of Object.entries(ceilings) as [CeilingName, number | undefined][]) {
    const value = asked[name];
    if (ceiling === undefined || value === undefined || value <= ceiling) continue;
    throw new RuntimeSpecRefused(
      `${CEILING_FIELDS[name]} ${value} is above this runner's ceiling ${ceiling} (--max-task-limits ${name}=${ceiling}); ask for at most that`,
    );
  }
  // Each side service has its own caps (its defaults when the task sets none): each is held to the
  // same ceilings as the agent's runtime.
  for (const s of task.runtime.services ?? []) {
    const caps = { ...SERVICE_DEFAULT_LIMITS, ...s.limits };
    for (const name of ["memory_mb", "cpus", "pids"] as const) {
      const ceiling = ceilings[name];
      if (ceiling === undefined || caps[name] <= ceiling) continue;
      throw new RuntimeSpecRefused(
        `runtime.services ${s.name}: limits.${name} ${caps[name]}${Object.hasOwn(s.limits, name) ? "" : " (the default)"} is above this runner's ceiling ${ceiling} (--max-task-limits ${name}=${ceiling}); ask for at most that`,
      );
    }
  }
}
