import type { Runtime } from "../runtime/runtime.ts";

/**
 * The agent's work as one patch: every change against `baseRef` in `repoDir`, new untracked files
 * included (a throwaway index, so the agent's own index is left alone), ignored files left out, and
 * `exclude` pathspecs dropped (e.g. the tests the evaluator brings itself). The agent's git config
 * is not read (its `core.fsmonitor` or diff drivers would run code); `$2` is `--binary` for the patch
 * or `--name-only` for the list of paths.
 */
const DIFF_SCRIPT = `set -e
idx="$(mktemp)"
trap 'rm -f "$idx"' EXIT
rm -f "$idx"
export GIT_INDEX_FILE="$idx"
base="$1"
mode="$2"
shift 2
git read-tree "$base"
git -c core.fsmonitor=false -c core.hooksPath=/dev/null add -A -- .
git -c core.quotepath=off -c core.fsmonitor=false diff --cached "$mode" --no-color --no-ext-diff --no-textconv "$base" -- "$@"`;

export interface PatchResult {
  ok: boolean;
  patch: string;
  /** Changed paths matching `dropGlobs`, left out of `patch`. */
  dropped: string[];
  error: string | null;
}

export async function diffWorkDir(
  runtime: Runtime,
  opts: { repoDir: string; baseRef: string; exclude: string[]; dropGlobs?: string[]; timeoutMs: number },
): Promise<PatchResult> {
  const exclude = opts.exclude.map((p) => `:(exclude)${p}`);
  const drop = opts.dropGlobs ?? [];
  const git = (mode: string, pathspecs: string[]) =>
    runtime.exec(["sh", "-c", DIFF_SCRIPT, "git-diff", opts.baseRef, mode, ...pathspecs], {
      cwd: opts.repoDir,
      timeoutMs: opts.timeoutMs,
      env: { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
  const res = await git("--binary", [".", ...exclude, ...drop.map((g) => `:(exclude,glob)${g}`)]);
  const names = drop.length
    ? await git("--name-only", [...drop.map((g) => `:(glob)${g}`), ...exclude])
    : null;
  const failed = res.exitCode !== 0 ? res : names && names.exitCode !== 0 ? names : null;
  if (failed) {
    return {
      ok: false,
      patch: "",
      dropped: [],
      error: `git diff failed (exit ${failed.exitCode}): ${failed.stderr.trim().slice(-2000)}`,
    };
  }
  const dropped = (names?.stdout ?? "").split("\n").filter((l) => l !== "");
  return { ok: true, patch: res.stdout, dropped, error: null };
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
