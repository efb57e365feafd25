import { constants } from "node:fs";
import { lstat, open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { HarborTaskRefused } from "./harbor-refusal.ts";

/**
 * Reading a Harbor task directory that came from elsewhere (a downloaded collection): no symlink is
 * followed anywhere in it. A link would make a host file (a key, `/etc/hostname`) the agent's
 * instruction, the task's config or its tests, so each one is refused with its path. Every path
 * component below the task dir is checked with lstat, and the last one is opened with O_NOFOLLOW.
 */

export function refuseLink(rel: string): never {
  throw new HarborTaskRefused(`${rel}: a symlink (links in a task are not followed)`);
}

/** Kind of `rel` under `dir` (null when missing), every component of it checked for links. */
export async function entryKind(dir: string, rel: string): Promise<"file" | "dir" | "other" | null> {
  const parts = rel.split("/").filter((p) => p !== "");
  for (let i = 1; i <= parts.length; i++) {
    const sub = parts.slice(0, i).join("/");
    const info = await lstat(join(dir, sub)).catch(() => null);
    if (info === null) return null;
    if (info.isSymbolicLink()) refuseLink(sub);
    if (i === parts.length) return info.isFile() ? "file" : info.isDirectory() ? "dir" : "other";
    if (!info.isDirectory()) return null;
  }
  return "dir";
}

/** The task dir itself: a link to it is refused too (the caller may name it through a collection). */
export async function checkTaskDir(dir: string): Promise<void> {
  const info = await lstat(dir).catch(() => null);
  if (info?.isSymbolicLink()) refuseLink(dir);
  if (!info?.isDirectory()) throw new HarborTaskRefused(`${dir}: not a directory`);
}

/** The bytes of the regular file `rel`, or null when it is missing or not a regular file. */
export async function readTaskFile(dir: string, rel: string): Promise<Buffer | null> {
  if ((await entryKind(dir, rel)) !== "file") return null;
  const handle = await open(
    join(dir, rel),
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  ).catch((err: NodeJS.ErrnoException) => {
    // ELOOP: the file became a link after the check.
    if (err.code === "ELOOP") refuseLink(rel);
    throw err;
  });
  try {
    if (!(await handle.stat()).isFile()) return null;
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Regular files under the directory `rel` (paths relative to it), sorted; a link or device is refused. */
export async function listTaskFiles(dir: string, rel: string): Promise<string[]> {
  const kind = await entryKind(dir, rel);
  if (kind === null) return [];
  if (kind !== "dir") throw new HarborTaskRefused(`${rel}: not a directory`);
  const out: string[] = [];
  const walk = async (sub: string): Promise<void> => {
    for (const entry of await readdir(join(dir, rel, sub), { withFileTypes: true })) {
      const path = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) refuseLink(`${rel}/${path}`);
      else if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) out.push(path);
      else throw new HarborTaskRefused(`${rel}/${path}: not a regular file or directory`);
    }
  };
  await walk("");
  return out.sort();
}
