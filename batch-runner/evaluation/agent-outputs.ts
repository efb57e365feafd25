import { constants } from "node:fs";
import { lstat, mkdir, mkdtemp, open, readdir, readlink, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Runtime } from "../runtime/runtime.ts";
import type { Evaluation, EvaluationContext } from "./evaluator.ts";

/** The judge's copy of the agent's outputs is bounded: a work dir past this is refused, not judged. */
export const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;
export const MAX_OUTPUT_FILES = 20_000;

export interface CopiedOutputs {
  /** Output paths copied (missing ones are left out). */
  copied: string[];
  /** What was left behind and why (symlinks, sockets, `.git`). */
  skipped: string[];
  bytes: number;
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
  refused: (reason: string) => Record<string, unknown>,
  judge: (fresh: Runtime, copied: CopiedOutputs) => Promise<Evaluation>,
): Promise<Evaluation> {
  const fresh = await ctx.freshRuntime();
  try {
    let copied: CopiedOutputs;
    try {
      copied = await copyAgentOutputs(ctx.runtime, fresh, outputs);
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
 * Copies the declared `outputs` (paths relative to the agent's work dir) into the judge's runtime at
 * the same paths. Only regular files (mode bits without set-id) and directories travel: a symlink
 * would let an output name the judge's own hidden file (`answer.txt -> expected.txt`) or a host path,
 * so none is followed or recreated. `.git` stays behind: its config and hooks run code in any git
 * command the judge makes; the judge keeps the repository its prepare steps built.
 * Read on the host (every runtime's work dir is a host dir), each file opened without following links.
 */
export async function copyAgentOutputs(
  agent: Runtime,
  judge: Runtime,
  outputs: readonly string[],
): Promise<CopiedOutputs> {
  const root = await realpath(agent.workDir);
  const staging = await mkdtemp(join(tmpdir(), "polar-outputs-"));
  const result: CopiedOutputs = { copied: [], skipped: [], bytes: 0 };
  let files = 0;
  const take = async (from: string, to: string, rel: string): Promise<void> => {
    const info = await lstat(from).catch(() => null);
    if (!info) return;
    if (info.isSymbolicLink()) {
      result.skipped.push(`${rel}: a symlink (to ${await readlink(from).catch(() => "?")}), not copied`);
    } else if (info.isDirectory()) {
      if (rel.split("/").pop() === ".git") {
        result.skipped.push(`${rel}: git metadata, not copied`);
        return;
      }
      await mkdir(to, { recursive: true });
      for (const name of (await readdir(from)).sort()) {
        await take(join(from, name), join(to, name), rel === "." ? name : `${rel}/${name}`);
      }
    } else if (info.isFile()) {
      if (++files > MAX_OUTPUT_FILES) throw new OutputsTooLarge(`over ${MAX_OUTPUT_FILES} files`);
      await mkdir(dirname(to), { recursive: true });
      result.bytes += await copyFileInside(root, from, to, MAX_OUTPUT_BYTES - result.bytes);
    } else {
      result.skipped.push(`${rel}: not a regular file, not copied`);
    }
  };
  try {
    for (const output of outputs) {
      const parts = output.split("/").filter((p) => p !== "" && p !== ".");
      // Every parent component must be a real directory: a linked parent would lead out of the work dir.
      let linked = false;
      for (let i = 1; i < parts.length && !linked; i++) {
        const parent = await lstat(join(root, ...parts.slice(0, i))).catch(() => null);
        linked = parent !== null && !parent.isDirectory();
      }
      if (linked) {
        result.skipped.push(`${output}: a parent is not a directory, not copied`);
        continue;
      }
      const rel = parts.length ? parts.join("/") : ".";
      const from = join(root, ...parts);
      if (!(await lstat(from).catch(() => null))) continue;
      await take(from, join(staging, ...parts), rel);
      result.copied.push(rel);
    }
    // Replaced entry by entry, so what the judge's prepare steps built beside the outputs stays.
    for (const output of result.copied) {
      const names = output === "." ? await readdir(staging) : [output];
      for (const name of names) await judge.upload(join(staging, name), name);
    }
    return result;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Copies one file opened without following links, checked inside the work dir once open. */
async function copyFileInside(root: string, from: string, to: string, left: number): Promise<number> {
  const handle = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) return 0;
    // A directory swapped for a link between the walk and the open would put the file elsewhere.
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => from);
    if (!real.startsWith(`${root}/`)) return 0;
    if (info.size > left) throw new OutputsTooLarge(`over ${MAX_OUTPUT_BYTES} bytes`);
    const out = await open(to, "wx", info.mode & 0o777);
    try {
      let copied = 0;
      const buf = Buffer.alloc(1024 * 1024);
      for (;;) {
        const { bytesRead } = await handle.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        copied += bytesRead;
        // The file may grow after the stat (a process the agent left running).
        if (copied > left) throw new OutputsTooLarge(`over ${MAX_OUTPUT_BYTES} bytes`);
        await out.write(buf, 0, bytesRead);
      }
      return copied;
    } finally {
      await out.close();
    }
  } finally {
    await handle.close();
  }
}
