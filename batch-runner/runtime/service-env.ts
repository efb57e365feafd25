import type { SideService } from "../../shared/schemas/side-service.ts";
import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";

/**
 * A side service's environment with its `{ from_env }` references filled from the runner's own
 * environment, for only the names the operator allows (`--service-env`). Nothing else of the
 * runner's environment reaches a service, and none of it reaches the agent. A reference that cannot
 * be filled (not allowed, or allowed but unset or empty) refuses the session naming the variable,
 * unless the task gave a default (compose's `${NAME:-default}`), which the service then gets: never
 * a silent empty value.
 */
export function serviceEnvOf(
  s: SideService,
  allowed: readonly string[],
  runnerEnv: NodeJS.ProcessEnv,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(s.env)) {
    if (typeof value === "string") {
      out[key] = value;
      continue;
    }
    const name = value.from_env;
    const given = allowed.includes(name) ? runnerEnv[name] : undefined;
    if (given !== undefined && given !== "") out[key] = given;
    else if (value.default !== undefined) out[key] = value.default;
    else
      throw new RuntimeSpecRefused(
        `runtime.services ${s.name}: env ${key} takes ${name} from the runner's environment, ` +
          (allowed.includes(name)
            ? `which --service-env allows but does not set (set ${name} where the runner starts)`
            : `which this runner does not pass to services (start it with --service-env ${name})`),
      );
  }
  return out;
}

/** Every service's environment fills (so a session that cannot start its services stops at INIT, before any is built). */
export function checkServiceEnv(
  services: SideService[],
  allowed: readonly string[],
  runnerEnv: NodeJS.ProcessEnv,
): void {
  for (const s of services) serviceEnvOf(s, allowed, runnerEnv);
}

/**
 * The values services took from the runner's environment, value -> its name: what a service's log
 * tail or healthcheck output must not carry into a session's `error` (a service that prints its
 * key while failing to start).
 */
export function runnerValues(
  services: SideService[],
  allowed: readonly string[],
  runnerEnv: NodeJS.ProcessEnv,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of services)
    for (const value of Object.values(s.env)) {
      if (typeof value === "string" || !allowed.includes(value.from_env)) continue;
      const given = runnerEnv[value.from_env];
      if (given) out.set(given, value.from_env);
    }
  return out;
}

/** `text` with each of `values` replaced by a note naming its variable. */
export function redactValues(text: string, values: Map<string, string>): string {
  let out = text;
  // Longest first, so a value holding another is replaced whole.
  for (const [value, name] of [...values].sort((a, b) => b[0].length - a[0].length))
    out = out.replaceAll(value, `[${name}: redacted]`);
  return out;
}
