import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/**
 * `mkdir -p` one level at a time. Node's recursive mkdir can spin forever on a pseudo file system
 * (`/proc/x` loops at full CPU, deaf to Ctrl-C); here each level is one bounded system call and
 * the first failure is reported with the directory and the cause.
 */
export async function makeDir(path: string): Promise<void> {
  const target = resolve(path);
  const missing: string[] = [];
  let dir = target;
  for (;;) {
    const info = await stat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return null;
      throw new Error(`cannot create ${target}: ${dir}: ${err.code ?? err.message}`);
    });
    if (info) {
      if (!info.isDirectory()) throw new Error(`cannot create ${target}: ${dir} is not a directory`);
      break;
    }
    missing.unshift(dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const level of missing) {
    try {
      await mkdir(level);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === "EEXIST" && (await stat(level)).isDirectory()) continue;
      throw new Error(`cannot create ${target}: mkdir ${level}: ${e.code ?? e.message}`);
    }
  }
}
