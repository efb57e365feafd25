import { cp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** The host directories of one session: `work` (the harness's cwd), `home` (its HOME) and `run` (sockets). */
export interface SessionDirs {
  root: string;
  workDir: string;
  homeDir: string;
  runDir: string;
}

/** Root of all session dirs unless a runtime is given one (`POLAR_SESSIONS_DIR`). */
export function defaultSessionsRoot(): string {
  return process.env.POLAR_SESSIONS_DIR ?? join(tmpdir(), "polar-sessions");
}

/** A fresh, empty set of dirs: a rerun of the same session never sees the files of an earlier attempt. */
export async function createSessionDirs(sessionsRoot: string, runtimeId: string): Promise<SessionDirs> {
  const root = resolve(sessionsRoot, runtimeId);
  await rm(root, { recursive: true, force: true });
  const dirs = { root, workDir: join(root, "work"), homeDir: join(root, "home"), runDir: join(root, "run") };
  await Promise.all([
    mkdir(dirs.workDir, { recursive: true }),
    mkdir(dirs.homeDir, { recursive: true }),
    mkdir(dirs.runDir, { recursive: true }),
  ]);
  return dirs;
}

/** Work and home are bind-mounted at their host paths in every backend, so one mapping serves all. */
export function hostPathOf(dirs: SessionDirs, path: string): string {
  const host = isAbsolute(path) ? path : resolve(dirs.workDir, path);
  if (!host.startsWith(`${dirs.root}/`)) {
    throw new Error(`path ${JSON.stringify(path)} is outside the session's work and home dirs (${dirs.root})`);
  }
  return host;
}

export async function copyPath(from: string, to: string): Promise<void> {
  await mkdir(resolve(to, ".."), { recursive: true });
  await cp(from, to, { recursive: true, force: true });
}

export async function removeSessionDirs(dirs: SessionDirs): Promise<void> {
  await rm(dirs.root, { recursive: true, force: true });
}
