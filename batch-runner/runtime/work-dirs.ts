import { appendFileSync, existsSync } from "node:fs";
import { cp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { removeSessionCgroups } from "./cgroup.ts";
import { removeRecordedContainer } from "./container-record.ts";
import { DiskVolume, unmountUnder } from "./disk-volume.ts";
import { killSessionProcesses } from "./session-processes.ts";

/** The host directories of one session: `work` (the harness's cwd), `home` (its HOME) and `run` (sockets). */
export interface SessionDirs {
  root: string;
  workDir: string;
  homeDir: string;
  runDir: string;
  /** The size-capped filesystem holding work and home, when the session has a disk limit. */
  volume?: DiskVolume;
}

/** Root of all session dirs unless a runtime is given one (`POLAR_SESSIONS_DIR`). */
export function defaultSessionsRoot(): string {
  return process.env.POLAR_SESSIONS_DIR ?? join(tmpdir(), "polar-sessions");
}

/**
 * A fresh, empty set of dirs: a rerun of the same session never sees the files of an earlier attempt.
 * With `diskMb`, work and home live on a volume of that size (disk-volume.ts), the rest beside it.
 */
export async function createSessionDirs(
  sessionsRoot: string,
  runtimeId: string,
  opts: { diskMb?: number } = {},
): Promise<SessionDirs> {
  const root = resolve(sessionsRoot, runtimeId);
  await unmountUnder(root);
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  let volume: DiskVolume | undefined;
  try {
    volume = opts.diskMb !== undefined ? await DiskVolume.create(root, opts.diskMb) : undefined;
  } catch (err) {
    await unmountUnder(root);
    await rm(root, { recursive: true, force: true });
    throw new Error(`the session's ${opts.diskMb} MiB volume could not be made: ${(err as Error).message}`);
  }
  const data = volume?.mountPoint ?? root;
  const dirs: SessionDirs = {
    root,
    workDir: join(data, "work"),
    homeDir: join(data, "home"),
    runDir: join(root, "run"),
    volume,
  };
  await Promise.all([
    mkdir(dirs.workDir, { recursive: true }),
    mkdir(dirs.homeDir, { recursive: true }),
    mkdir(dirs.runDir, { recursive: true }),
  ]);
  // In the session root, which no sandbox sees (the run dir is bound in for the bridge socket): a
  // later runner's reaper trusts these records, so an agent must not be able to forge them.
  await writeFile(join(dirs.root, OWNER_FILE), String(process.pid));
  return dirs;
}

const OWNER_FILE = "runner.pid";
const PGIDS_FILE = "pgids";

/** Remembers a process group started for the session, so a later runner can reap it if this one dies. */
export function recordProcessGroup(dirs: SessionDirs, pgid: number): void {
  try {
    // Synchronous: it must land before the process can outlive a crash of this runner.
    appendFileSync(join(dirs.root, PGIDS_FILE), `${pgid}\n`);
  } catch {
    // The session is being torn down.
  }
}

/**
 * Detached harness processes survive a runner killed with SIGKILL. A runner starting on the same
 * sessions root kills the process groups of sessions whose runner is gone and removes their dirs.
 */
export async function reapOrphanedSessions(sessionsRoot: string): Promise<number> {
  let reaped = 0;
  let entries: string[];
  try {
    entries = await readdir(sessionsRoot);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const recordDir = join(sessionsRoot, name);
    const owner = Number(await readFile(join(recordDir, OWNER_FILE), "utf8").catch(() => "NaN"));
    if (!Number.isInteger(owner) || owner === process.pid || isAlive(owner)) continue;
    const pgids = (await readFile(join(recordDir, PGIDS_FILE), "utf8").catch(() => ""))
      .split("\n")
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 1);
    for (const pgid of pgids) {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    // What left its process group (setsid) still carries the session's marker (process runtime).
    await killSessionProcesses(name, join(sessionsRoot, name));
    await removeRecordedContainer(recordDir);
    // What left both (a daemon that cleared its env) is still in the session's cgroup.
    await removeSessionCgroups(name);
    await unmountUnder(recordDir);
    await rm(join(sessionsRoot, name), { recursive: true, force: true });
    reaped++;
  }
  return reaped;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The paths that exist (a bind of a missing path makes bwrap and container engines fail). */
export function existingPaths(paths: string[] | undefined): string[] {
  return (paths ?? []).filter((p) => existsSync(p));
}

/** Work and home are bind-mounted at their host paths in every backend, so one mapping serves all. */
export function hostPathOf(dirs: SessionDirs, path: string): string {
  const host = isAbsolute(path) ? path : resolve(dirs.workDir, path);
  if (!host.startsWith(`${dirs.root}/`)) {
    throw new Error(
      `path ${JSON.stringify(path)} is outside the session's work and home dirs (${dirs.root})`,
    );
  }
  return host;
}

export async function copyPath(from: string, to: string): Promise<void> {
  await mkdir(resolve(to, ".."), { recursive: true });
  await cp(from, to, { recursive: true, force: true });
}

export async function removeSessionDirs(dirs: SessionDirs): Promise<void> {
  // Unmounting drops the agent's files at once (100,000 of them cost nothing to delete).
  await dirs.volume?.remove();
  await rm(dirs.root, { recursive: true, force: true });
}
