/**
 * Variables every judge command (test_on_output's command, swe_patch's tests) starts with, under the
 * task's own `env`: interpreters ignore what sits in HOME or beside a script. A fresh runtime already
 * has an empty HOME; these also hold where the agent's files are copied in (an `outputs` dir, a patch).
 * - PYTHONNOUSERSITE: no user site-packages, so no `usercustomize.py`.
 * - PYTHONSAFEPATH: the script's dir and the cwd are not put first on sys.path, so a `json.py`
 *   beside a hidden `check.py` does not shadow the standard library.
 * - PYTHONDONTWRITEBYTECODE: no `__pycache__` left for a later command to pick up.
 * - GIT_CONFIG_GLOBAL / GIT_CONFIG_NOSYSTEM: no git config but the repo's own (hooks, aliases, filters).
 * - BASH_ENV / ENV: no rc file sourced by a non-interactive bash or sh.
 */
export const JUDGE_ENV: Readonly<Record<string, string>> = {
  PYTHONNOUSERSITE: "1",
  PYTHONSAFEPATH: "1",
  PYTHONDONTWRITEBYTECODE: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  BASH_ENV: "",
  ENV: "",
};

export function judgeEnv(taskEnv: Record<string, string>): Record<string, string> {
  return { ...JUDGE_ENV, ...taskEnv };
}
