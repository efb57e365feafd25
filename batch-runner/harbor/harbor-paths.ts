/**
 * Harbor tasks name fixed paths of their container: the tests at `/tests`, the verifier's output
 * under `/logs` (`/logs/verifier/reward.txt`) and the image's WORKDIR (`/app`). Polar's runtimes
 * give a session no writable `/`: its work dir and HOME sit elsewhere. So each such absolute path
 * in the task's text (its instruction, its test files) is rewritten to where that dir really is.
 * A path matches only whole: `/tests` in `/tests/x.py` or `"/tests"`, never in `/testsuite` or
 * `/a/tests`.
 */
export interface PathMap {
  /** Image path -> the path that stands in for it (no trailing slash on either). */
  [imagePath: string]: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Rewrites every whole occurrence of each mapped path; longer paths first (`/logs/verifier` before `/logs`). */
export function rewritePaths(text: string, map: PathMap): string {
  const from = Object.keys(map).sort((a, b) => b.length - a.length);
  if (from.length === 0) return text;
  const pattern = new RegExp(`(?<![\\w./-])(${from.map(escapeRegExp).join("|")})(?![\\w.-])`, "g");
  return text.replace(pattern, (path) => map[path]);
}

/** Where the judge puts Harbor's `/tests` and `/logs` (under its HOME, outside the agent's work dir). */
export function judgeDirs(homeDir: string): { tests: string; logs: string; verifier: string } {
  const base = `${homeDir}/harbor`;
  return { tests: `${base}/tests`, logs: `${base}/logs`, verifier: `${base}/logs/verifier` };
}
