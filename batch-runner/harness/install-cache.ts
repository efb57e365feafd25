import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";

/*
 * What the npm and pip installers share: the cache layout (`<cacheDir>/<name>@<version>`), the
 * marker that means "installed", and the lock dir that makes concurrent runners wait for one
 * install instead of racing into one prefix.
 */

export interface InstallOptions {
  /** Where CLIs are installed. Default: POLAR_HARNESS_CACHE, else ~/.cache/polar-harnesses. */
  cacheDir?: string;
  /** npm's download cache (`--cache`); default POLAR_NPM_CACHE. Then npm prefers it over the network. */
  npmCache?: string;
  /** A registry mirror (POLAR_NPM_REGISTRY); default: npm's own configuration. */
  registry?: string;
  /** Use only the npm cache, never the registry (POLAR_NPM_OFFLINE=1). */
  offline?: boolean;
  /** Give up waiting for another process's install after this long. */
  lockTimeoutMs?: number;
  /** npm's executable; default `npm` from PATH. */
  npm?: string;
  /** Python that creates the venv of a pip-installed preset; default POLAR_PYTHON, else `python3`. */
  python?: string;
  log?: (line: string) => void;
  /** How often a running install says it is still at work (default 5000 ms). */
  progressEveryMs?: number;
}

export interface InstalledHarness {
  /** `<prefix>/node_modules/.bin`, what the preset's invocation takes as binDir. */
  binDir: string;
  prefix: string;
  /** true when this call ran npm, false when the cache already had it. */
  installed: boolean;
}

/** Written last: its presence is what "installed" means. */
export const MARKER = ".polar-installed.json";
/** A lock older than this is from a dead installer (npm installs take seconds to minutes). */
export const STALE_LOCK_MS = 15 * 60_000;

export function defaultCacheDir(): string {
  return process.env.POLAR_HARNESS_CACHE || join(homedir(), ".cache", "polar-harnesses");
}

export function prefixFor(cacheDir: string, name: string, version: string): string {
  return join(cacheDir, `${name}@${version}`);
}

export async function acquireLock(lock: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      // mkdir is atomic: exactly one process creates the dir.
      await mkdir(lock);
      await writeFile(join(lock, "pid"), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    if (await lockIsStale(lock)) {
      await rm(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for the install lock ${lock}; remove it if no install runs`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function lockIsStale(lock: string): Promise<boolean> {
  try {
    const pid = Number(await readFile(join(lock, "pid"), "utf8"));
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) return true;
    return Date.now() - (await stat(lock)).mtimeMs > STALE_LOCK_MS;
  } catch {
    // The pid file is written right after mkdir; give a just-created lock a moment.
    try {
      return Date.now() - (await stat(lock)).mtimeMs > 10_000;
    } catch {
      return false;
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
