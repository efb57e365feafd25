/**
 * The podman lane: the docker runtime on a real engine. `podmanLane()` builds the minimal image
 * (scripts/podman-image.ts, cached by its inputs) and starts one container from it with the flags
 * the runtime would use; tests skip with the reason when that fails.
 *
 *   const lane = await podmanLane();
 *   describe.skipIf(!lane.ok)("...", () => { ... lane.image ... });
 *
 * Without podman the tests skip; under CI=true, a podman that is installed but cannot run a
 * container is a failure (like the real-engine lane), since .ci/run installs it to be used.
 */
import { spawnSync } from "node:child_process";
import { resolveContainerEngine } from "../../batch-runner/runtime/container-engine.ts";
import { ensurePodmanImage } from "../../scripts/podman-image.ts";

export type PodmanLane = { ok: true; image: string; cli: string[] } | { ok: false; reason: string };

export async function podmanLane(): Promise<PodmanLane> {
  if (spawnSync("podman", ["--version"]).status !== 0)
    return {
      ok: false,
      reason: "podman is not installed (apt-get install podman runc buildah; .ci/run does)",
    };
  try {
    const engine = await resolveContainerEngine("podman");
    const cli = [engine.bin, ...engine.globalFlags];
    const image = await ensurePodmanImage("podman", (line) => console.log(line));
    const probe = spawnSync(
      "podman",
      [...engine.globalFlags, "run", "--rm", "--network", "none", ...engine.runFlags, image, "true"],
      { encoding: "utf8", timeout: 120_000 },
    );
    if (probe.status !== 0) throw new Error(`podman run ${image} true failed: ${probe.stderr.trim()}`);
    return { ok: true, image, cli };
  } catch (err) {
    const reason = `podman is installed but cannot run a container here: ${(err as Error).message}`;
    if (process.env.CI === "true") throw new Error(reason);
    return { ok: false, reason };
  }
}
