import type { TaskToml } from "./task-toml.ts";

/**
 * Harbor's verifier phase as Polar runs it (harbor/trial/network_policy.py, verifier_mode.py). The
 * tests always run in a fresh judge runtime after the agent finished, holding the agent's outputs
 * and then the tests (never in the agent's runtime: nothing the agent left running sees them).
 * - `verifier.environment_mode` "separate" -> `runtime.judge_services` "separate": the judge starts
 *   its own side services; "shared" (Harbor's default) joins the agent's, as the agent left them.
 * - The verifier's network is `verifier.network_mode`, else the environment's (`network_mode`, or
 *   `allow_internet = false`), else Harbor's default, the internet -> `runtime.judge_network`,
 *   which a runner honours only under `--allow-verifier-network`. The agent never gets one.
 */
export function verifierNetworkAsked(toml: TaskToml): boolean {
  const mode =
    toml.verifier?.network_mode ??
    toml.environment?.network_mode ??
    (toml.environment?.allow_internet === false ? "no-network" : "public");
  return mode === "public";
}

export function judgeRuntimeFields(toml: TaskToml): {
  judge_services?: "separate";
  judge_network?: true;
} {
  return {
    ...(toml.verifier?.environment_mode === "separate" ? { judge_services: "separate" as const } : {}),
    ...(verifierNetworkAsked(toml) ? { judge_network: true as const } : {}),
  };
}

/** What `polar import-harbor` says about the verifier phase beyond `networkWarnings` (task-toml.ts). */
export function verifierWarnings(toml: TaskToml, hasServices: boolean): string[] {
  const shared = toml.verifier?.environment_mode !== "separate";
  if (!verifierNetworkAsked(toml) || !hasServices || !shared) return [];
  return [
    "task.toml: the verifier asks for the internet (Harbor's default) but shares the agent's side services, whose loopback has no network: its tests run without one (verifier.environment_mode = \"separate\" gives it its own services and the network)",
  ];
}
