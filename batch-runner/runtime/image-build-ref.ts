import { RuntimeSpecRefused } from "./runtime-spec-refused.ts";

/**
 * `runtime.image` of a task whose image the runner builds: `build:<absolute dir>`, the dir holding
 * the Dockerfile and its build context (`polar import-harbor` writes it for a Harbor task's
 * `environment/`). Only the docker backend builds (image-build.ts).
 */
export const BUILD_PREFIX = "build:";
/**
 * `prebuilt:<image>`: a task image run as a built one is (its ENTRYPOINT kept, its WORKDIR the
 * work dir's start) without building it: a Harbor task's `environment.docker_image`.
 */
export const PREBUILT_PREFIX = "prebuilt:";

/**
 * `build:timeout=<seconds>:<dir>`: a build with the task's own time limit (a Harbor task's
 * `environment.build_timeout_sec`), under the runner's (image-build.ts takes the smaller).
 */
export function buildRef(dir: string, timeoutSec?: number): string {
  return `${BUILD_PREFIX}${timeoutSec ? `timeout=${timeoutSec}:` : ""}${dir}`;
}

/** A build context as `buildContextOf` gives it -> its dir and the task's time limit (null: the runner's). */
export function splitBuildContext(context: string): { dir: string; timeoutMs: number | null } {
  const m = /^timeout=(\d+(?:\.\d+)?):(.*)$/s.exec(context);
  if (!m) return { dir: context, timeoutMs: null };
  const seconds = Number(m[1]);
  return { dir: m[2] as string, timeoutMs: seconds > 0 ? Math.ceil(seconds * 1000) : null };
}

/** The context of a build reference (`splitBuildContext` reads it), or null for an ordinary image reference. */
export function buildContextOf(image: string | undefined): string | null {
  return image?.startsWith(BUILD_PREFIX) ? image.slice(BUILD_PREFIX.length) : null;
}

/** The image of a `prebuilt:` reference, or null. */
export function prebuiltImageOf(image: string | undefined): string | null {
  return image?.startsWith(PREBUILT_PREFIX) ? image.slice(PREBUILT_PREFIX.length) : null;
}

/**
 * bwrap and apptainer build nothing: a `build:` or `prebuilt:` image is refused there by name (the session ends
 * ERROR at INIT) rather than read as a root dir or an image file. Import with `--no-build` for them.
 */
export function refuseBuildImage(image: string | undefined, backend: "bwrap" | "apptainer"): void {
  if (buildContextOf(image) === null && prebuiltImageOf(image) === null) return;
  throw new RuntimeSpecRefused(
    `runtime.image ${JSON.stringify(image)} is refused for ${backend}: only the docker backend builds an image from a Dockerfile or runs a task image (use runtime.backend docker, or polar import-harbor --no-build)`,
  );
}
