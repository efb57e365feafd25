/**
 * `runtime.image` of a task whose image the runner builds: `build:<absolute dir>`, the dir holding
 * the Dockerfile and its build context (`polar import-harbor` writes it for a Harbor task's
 * `environment/`). Only the docker backend builds (image-build.ts).
 */
export const BUILD_PREFIX = "build:";

/** The context dir of a build reference, or null for an ordinary image reference. */
export function buildContextOf(image: string | undefined): string | null {
  return image?.startsWith(BUILD_PREFIX) ? image.slice(BUILD_PREFIX.length) : null;
}
