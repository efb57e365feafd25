import { HarborTaskRefused } from "./harbor-refusal.ts";
import type { ArtifactEntry } from "./task-toml.ts";

/**
 * A Harbor task's `artifacts` (container paths Harbor copies out after the run) -> work-dir paths
 * the runner keeps with the session's outputs (`TaskRequest.artifacts`). Polar's sandbox keeps only
 * its work dir (the image's WORKDIR) past the run, so a path outside it, or one in a side service,
 * is refused by name; `destination` and `exclude` are not applied (a warning says so).
 */
export function artifactPaths(
  entries: readonly ArtifactEntry[],
  workdir: string,
  where = "artifacts",
): { paths: string[]; warnings: string[] } {
  const paths: string[] = [];
  const warnings: string[] = [];
  for (const entry of entries) {
    const e = typeof entry === "string" ? { source: entry } : entry;
    const at = `task.toml: ${where}: ${JSON.stringify(e.source)}`;
    if (e.service && e.service !== "main")
      throw new HarborTaskRefused(
        `${at} is collected from service ${JSON.stringify(e.service)}: only the agent's work dir is kept`,
      );
    const source = e.source.replace(/\/+$/, "");
    const rel =
      source === workdir
        ? "."
        : source.startsWith(`${workdir}/`)
          ? source.slice(workdir.length + 1)
          : source.startsWith("/")
            ? null
            : source;
    if (rel === null || rel === "" || rel.split("/").includes(".."))
      throw new HarborTaskRefused(
        `${at} is outside the WORKDIR ${workdir}: only the agent's work dir is kept after the run`,
      );
    if (e.destination)
      warnings.push(
        `${at}: kept under its work-dir path, not at destination ${JSON.stringify(e.destination)}`,
      );
    if (e.exclude?.length) warnings.push(`${at}: exclude patterns are not applied (the whole path is kept)`);
    paths.push(rel);
  }
  return { paths: [...new Set(paths)], warnings };
}
