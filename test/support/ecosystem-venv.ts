/**
 * The venv of one environment ecosystem's real package (scripts/setup-ecosystem-venv.sh:
 * `nemo-gym` or `verifiers`), made on first use and then reused. Where it cannot be installed
 * the tests skip with the reason, except under CI=true, where that is a failure.
 *
 *   const venv = await ecosystemVenv("nemo-gym");
 *   describe.skipIf(!venv.ok)("...", () => { ... venv.bin("ng_collect_rollouts") ... });
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

export const ROOT = new URL("../../", import.meta.url).pathname;

export type EcosystemVenv =
  | { ok: true; python: string; bin: (name: string) => string; env: NodeJS.ProcessEnv }
  | { ok: false; reason: string; python: ""; bin: (name: string) => string; env: NodeJS.ProcessEnv };

/** Telemetry off in everything the packages pull in; python/src first, so the checkout's code runs. */
export const QUIET_ENV: NodeJS.ProcessEnv = {
  PYTHONPATH: join(ROOT, "python/src"),
  DO_NOT_TRACK: "1",
  RAY_USAGE_STATS_ENABLED: "0",
  HF_HUB_DISABLE_TELEMETRY: "1",
  HF_HUB_OFFLINE: "1",
  WANDB_MODE: "disabled",
  MLFLOW_TRACKING_URI: "",
  OTEL_SDK_DISABLED: "true",
  PYTHONUNBUFFERED: "1",
};

export async function ecosystemVenv(name: "nemo-gym" | "verifiers"): Promise<EcosystemVenv> {
  const dir = join(ROOT, ".cache", name);
  const bin = (exe: string) => join(dir, "bin", exe);
  const env = { ...process.env, ...QUIET_ENV };
  try {
    // Idempotent and quick once made; the first run installs the package (see the script).
    await promisify(execFile)("bash", [join(ROOT, "scripts/setup-ecosystem-venv.sh"), name], {
      timeout: 900_000,
    });
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? "")
      .split("\n")
      .filter((l) => l.trim() && !l.startsWith("WARNING: Location"))
      .slice(-4)
      .join(" | ");
    const reason = `scripts/setup-ecosystem-venv.sh ${name} failed: ${stderr || (err as Error).message}`;
    if (process.env.CI === "true") throw new Error(`the ${name} venv is required under CI but: ${reason}`);
    return { ok: false, reason, python: "", bin, env };
  }
  return { ok: true, python: bin("python"), bin, env };
}
