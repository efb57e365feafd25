import type { Runtime } from "../runtime/runtime.ts";

/**
 * The agent's work as one patch: every change against `baseRef` in `repoDir`, new untracked files
 * included (a throwaway index, so the agent's own index is left alone), ignored files left out, and
 * `exclude` pathspecs dropped (e.g. the tests the evaluator brings itself).
 */
const DIFF_SCRIPT = `set -e
idx="$(mktemp)"
trap 'rm -f "$idx"' EXIT
rm -f "$idx"
export GIT_INDEX_FILE="$idx"
base="$1"
shift
git read-tree "$base"
git add -A -- .
git -c core.quotepath=off diff --cached --binary --no-color --no-ext-diff "$base" -- "$@"`;

export interface PatchResult {
  ok: boolean;
  patch: string;
  error: string | null;
}

export async function diffWorkDir(
  runtime: Runtime,
  opts: { repoDir: string; baseRef: string; exclude: string[]; timeoutMs: number },
): Promise<PatchResult> {
  const pathspecs = [".", ...opts.exclude.map((p) => `:(exclude)${p}`)];
  const res = await runtime.exec(["sh", "-c", DIFF_SCRIPT, "git-diff", opts.baseRef, ...pathspecs], {
    cwd: opts.repoDir,
    timeoutMs: opts.timeoutMs,
  });
  if (res.exitCode !== 0) {
    return {
      ok: false,
      patch: "",
      error: `git diff failed (exit ${res.exitCode}): ${res.stderr.trim().slice(-2000)}`,
    };
  }
  return { ok: true, patch: res.stdout, error: null };
}

/** `git apply` of `patch` in `repoDir`; on failure the error is git's own explanation. */
export async function applyPatch(
  runtime: Runtime,
  patch: string,
  opts: { repoDir: string; timeoutMs: number },
): Promise<{ ok: boolean; error: string | null }> {
  const res = await runtime.exec(["git", "apply", "--binary", "--whitespace=nowarn", "-"], {
    cwd: opts.repoDir,
    stdin: patch,
    timeoutMs: opts.timeoutMs,
  });
  if (res.exitCode === 0) return { ok: true, error: null };
  const why = res.timedOut ? "timed out" : `exit ${res.exitCode}`;
  return { ok: false, error: `git apply failed (${why}): ${(res.stderr || res.stdout).trim().slice(-2000)}` };
}
