import { constants } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, readlink, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { globMatcher } from "../harbor/path-globs.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Evaluation, EvaluationContext } from "./evaluator.ts";

/**
 * The judge's copy of the agent's outputs is bounded: past these the judge does not run. Bytes are
 * the blocks the copy allocates (a sparse file's holes stay holes and cost nothing); the span is
 * what is read to find them (a hole is read as zeros), so a 1 TiB sparse file cannot stall the copy.
 */
export const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;
export const MAX_OUTPUT_SPAN = 1024 * 1024 * 1024;
export const MAX_OUTPUT_FILES = 20_000;

export interface CopiedOutputs {
  /** Output paths copied (missing ones are left out). */
  copied: string[];
  /** What was left behind and why (symlinks, sockets, `.git`, denied or prepared paths). */
  skipped: string[];
  /** Bytes the copies allocate in the judge's work dir. */
  bytes: number;
}

/** Which outputs may reach the judge (the task's `outputs_denied` and `outputs_replace` globs). */
export interface OutputRules {
  denied: readonly string[];
  replace: readonly string[];
}

/**
 * `__init__.py` in the dir of each judge file and every dir above it in the work dir: Python
 * imports the package a test file sits in (pytest does for `test_hidden.py`), so the agent's
 * `__init__.py` there would run inside the judge's own process. Always denied, whatever the task's
 * `outputs_denied`; packages elsewhere keep theirs.
 */
export function packageInitsAbove(judgeFiles: readonly string[]): string[] {
  const out = new Set<string>();
  for (const file of judgeFiles) {
    const dirs = file
      .split("/")
      .filter((p) => p !== "" && p !== ".")
      .slice(0, -1);
    for (let i = 0; i <= dirs.length; i++)
      out.add([...dirs.slice(0, i), "__init__.py"].map((p) => p.replace(/[*?[]/g, "[$&]")).join("/"));
  }
  return [...out];
}

/** The agent's outputs exceed the caps above: the judge does not run (reward 0, reason said). */
export class OutputsTooLarge extends Error {}

/**
 * The judging an evaluator does in a fresh runtime: the agent's `outputs` copied in, `judge` run
 * there, the runtime stopped after. Outputs past the caps score 0 without judging, with `refused`'s
 * metadata for the reason.
 */
export async function judgeInFreshRuntime(
  ctx: EvaluationContext,
  outputs: readonly string[],
  rules: OutputRules,
  refused: (reason: string) => Record<string, unknown>,
  judge: (fresh: Runtime, copied: CopiedOutputs) => Promise<Evaluation>,
): Promise<Evaluation> {
  const fresh = await ctx.freshRuntime();
  try {
    let copied: CopiedOutputs;
    try {
      copied = await copyAgentOutputs(ctx.runtime, fresh, outputs, rules);
    } catch (err) {
      if (!(err instanceof OutputsTooLarge)) throw err;
      return { outcome_reward: 0, metadata: refused(`the agent's outputs are ${err.message}`) };
    }
    return await judge(fresh, copied);
  } finally {
    await fresh.stop().catch(() => {});
  }
}

/**
 * Copies the declared `outputs` (paths relative to the agent's work dir) into the judge's work dir at
 * the same paths, straight onto the judge's own disk (its session volume when the task has
 * `disk_mb`): nothing is staged on the host, and holes are kept, so the copy costs what the agent's
 * files allocate, within the judge session's disk limit.
 *
 * What travels: regular files (mode bits without set-id) and directories. A symlink would let an
 * output name the judge's own hidden file (`answer.txt -> expected.txt`) or a host path, so none is
 * followed or recreated. `.git` stays behind: its config and hooks run code in any git command the
 * judge makes. The judge's tools come from the task, never from the outputs: a file matching
 * `rules.denied` (test-runner config, package scripts, `.pth`: a `conftest.py` or a `pytest.ini`
 * adding `--collect-only` would decide the verdict) is not copied, and neither is a file that would
 * replace, or be added inside, what the judge's prepare steps built (a rewritten Makefile, a `.pth`
 * in their venv) unless `rules.replace` or the declared output path itself names it.
 * Both work dirs are host dirs; every file is opened without following links on either side.
 */
export async function copyAgentOutputs(
  agent: Runtime,
  judge: Runtime,
  outputs: readonly string[],
  rules: OutputRules = { denied: [], replace: [] },
): Promise<CopiedOutputs> {
  const root = await realpath(agent.workDir);
  const dest = await realpath(judge.workDir);
  const denied = globMatcher(rules.denied);
  const replaceable = globMatcher(rules.replace);
  const result: CopiedOutputs = { copied: [], skipped: [], bytes: 0 };
  const budget = { files: 0, span: 0 };

  /**
   * `declared`: `rel` is a declared output path (the task named it, so it may replace what is there);
   * `inPrepared`: `rel` lies in a directory the judge's prepare steps built (below a declared one).
   */
  const take = async (rel: string, declared: boolean, inPrepared: boolean): Promise<void> => {
    const from = rel === "." ? root : join(root, rel);
    const to = rel === "." ? dest : join(dest, rel);
    const info = await lstat(from).catch(() => null);
    if (!info) return;
    const there = rel === "." ? null : await lstat(to).catch(() => null);
    const mayReplace = declared || replaceable(rel);
    const skip = (why: string) => void result.skipped.push(`${rel}: ${why}, not copied`);
    const built = "it would replace what the judge's prepare steps built (outputs_replace)";
    const inside = "it would add to a directory the judge's prepare steps built (outputs_replace)";
    if (info.isSymbolicLink()) return skip(`a symlink (to ${await readlink(from).catch(() => "?")})`);
    if (info.isDirectory()) {
      if (rel.split("/").pop() === ".git") return skip("git metadata");
      if (++budget.files > MAX_OUTPUT_FILES) throw new OutputsTooLarge(`over ${MAX_OUTPUT_FILES} files`);
      if (there && !there.isDirectory()) {
        if (!mayReplace) return skip(built);
        await rm(to, { recursive: true, force: true });
      }
      if (rel !== "." && !there?.isDirectory()) {
        if (inPrepared && !mayReplace) return skip(inside);
        await mkdir(to);
      }
      // A declared dir is like the work dir itself: new entries may go in, what was built stays.
      const prepared = there?.isDirectory() === true && !declared;
      for (const name of (await readdir(from)).sort()) {
        await take(rel === "." ? name : `${rel}/${name}`, false, prepared);
      }
      return;
    }
    if (!info.isFile()) return skip("not a regular file");
    if (denied(rel)) return skip("test-runner config or package scripts (outputs_denied)");
    if (there && !mayReplace) return skip(built);
    if (!there && inPrepared && !mayReplace) return skip(inside);
    if (++budget.files > MAX_OUTPUT_FILES) throw new OutputsTooLarge(`over ${MAX_OUTPUT_FILES} files`);
    if (there) await rm(to, { recursive: true, force: true });
    result.bytes += await copyFileSparse(root, dest, from, to, result.bytes, budget);
  };

  for (const output of outputs) {
    const parts = output.split("/").filter((p) => p !== "" && p !== ".");
    const rel = parts.length ? parts.join("/") : ".";
    // Every parent must be a real directory on both sides: a link would lead out of a work dir.
    if (!(await parentsAreDirs(root, parts)) || !(await parentsAreDirs(dest, parts, true))) {
      result.skipped.push(`${output}: a parent is not a directory, not copied`);
      continue;
    }
    if (!(await lstat(join(root, ...parts)).catch(() => null))) continue;
    if (parts.length > 1) await mkdir(join(dest, ...parts.slice(0, -1)), { recursive: true });
    await take(rel, rel !== ".", false);
    result.copied.push(rel);
  }
  return result;
}

/** True when each parent of `parts` under `base` is a directory (or, with `mayBeMissing`, absent). */
async function parentsAreDirs(base: string, parts: string[], mayBeMissing = false): Promise<boolean> {
  for (let i = 1; i < parts.length; i++) {
    const info = await lstat(join(base, ...parts.slice(0, i))).catch(() => null);
    if (info === null) return mayBeMissing;
    if (!info.isDirectory()) return false;
  }
  return true;
}

const CHUNK = 64 * 1024;
const ZEROS = Buffer.alloc(CHUNK);

/**
 * Copies one file opened without following links (checked inside `root` once open) to a new file
 * `to` inside `dest`, writing only the chunks that hold data: holes stay holes. Returns the bytes
 * the copy allocates. A full disk (the judge's volume) or the caps end the copy as OutputsTooLarge.
 */
async function copyFileSparse(
  root: string,
  dest: string,
  from: string,
  to: string,
  used: number,
  budget: { span: number },
): Promise<number> {
  const handle = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  let out: FileHandle | null = null;
  try {
    const info = await handle.stat();
    if (!info.isFile()) return 0;
    // A directory swapped for a link between the walk and the open would put the file elsewhere.
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => from);
    if (!real.startsWith(`${root}/`)) return 0;
    if (info.blocks * 512 > MAX_OUTPUT_BYTES - used)
      throw new OutputsTooLarge(`over ${MAX_OUTPUT_BYTES} bytes`);
    out = await open(
      to,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      info.mode & 0o777,
    );
    const realOut = await readlink(`/proc/self/fd/${out.fd}`).catch(() => to);
    if (!realOut.startsWith(`${dest}/`)) throw new Error(`output copy ${to} left the judge's work dir`);
    const buf = Buffer.alloc(CHUNK);
    let position = 0;
    let written = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, CHUNK, position);
      if (bytesRead === 0) break;
      // The file may grow after the stat (a process the agent left running).
      budget.span += bytesRead;
      if (budget.span > MAX_OUTPUT_SPAN) throw new OutputsTooLarge(`over ${MAX_OUTPUT_SPAN} bytes long`);
      const chunk = buf.subarray(0, bytesRead);
      if (!chunk.equals(ZEROS.subarray(0, bytesRead))) {
        written += bytesRead;
        if (written > MAX_OUTPUT_BYTES - used) throw new OutputsTooLarge(`over ${MAX_OUTPUT_BYTES} bytes`);
        await out.write(chunk, 0, bytesRead, position).catch(diskFull);
      }
      position += bytesRead;
    }
    await out.truncate(position).catch(diskFull);
    return (await out.stat()).blocks * 512;
  } finally {
    await out?.close();
    await handle.close();
  }
}

function diskFull(err: NodeJS.ErrnoException): never {
  if (err.code === "ENOSPC" || err.code === "EDQUOT")
    throw new OutputsTooLarge("over the judge session's disk limit (runtime.limits.disk_mb)");
  throw err;
}
