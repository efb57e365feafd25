/**
 * What a long-running `polar` server must not outlive: the process that started it, and the npm
 * process that launched it (`npx polar view &`, `npm run ...`). npm does not always pass a signal
 * on (SIGKILL, SIGHUP, or a SIGTERM while its child is still starting), and then the `sh -c polar
 * ...` it runs in between survives: the server's parent is alive, only the launcher is gone. So the
 * launcher is found once, by walking up the process tree, and watched like the parent; a server
 * launched by npm whose launcher is already gone when it looks stops at once (issue 41, item 15).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { basename } from "node:path";

/** A process, told apart from a later one with the same pid by its start time ("" where unknown). */
export interface ProcessRef {
  pid: number;
  start: string;
}

interface ProcessInfo extends ProcessRef {
  ppid: number;
  /** Exited, not yet reaped: as good as gone. */
  zombie: boolean;
  command: string[];
}

/** The parent as `bin/polar.js` saw it, before loading the CLI took its time. */
let parentAtStart: number | null = null;

export function noteParentAtStart(pid: number): void {
  parentAtStart = pid;
}

/** Why the server should stop now (its parent or launcher is gone), or null while both live. */
export type LaunchCheck = () => string | null;

export function watchLaunch(env: NodeJS.ProcessEnv = process.env): LaunchCheck {
  const parent = parentAtStart ?? process.ppid;
  const npm = launchedByNpm(env) ? nearestNpm(process.ppid) : undefined;
  return () => {
    // An orphan is re-parented (to init or a subreaper): a changed parent means "stop".
    if (parent > 1 && process.ppid !== parent) return `the process that started it (pid ${parent}) is gone`;
    if (npm === null) return "the npm process that launched it was gone before it looked";
    if (npm && !isAlive(npm)) return `the npm process that launched it (pid ${npm.pid}) is gone`;
    return null;
  };
}

/** npm sets these for every process it runs (`npx`/`npm exec`, `npm run`); they are inherited below it. */
function launchedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env.npm_command !== undefined || env.npm_lifecycle_event !== undefined;
}

/** Levels walked up at most: npm is a few above a server it launched. */
const MAX_DEPTH = 64;

/**
 * The nearest npm process above `pid`, or null when there is none (it is gone). Pid 1 is looked at
 * too: in a container whose command is `npx polar ...`, npm is the namespace's init.
 */
export function nearestNpm(pid: number): ProcessRef | null {
  for (let depth = 0; depth < MAX_DEPTH && pid >= 1; depth++) {
    const info = processInfo(pid);
    if (info === null || info.zombie) return null;
    if (isNpm(info.command)) return { pid: info.pid, start: info.start };
    pid = info.ppid;
  }
  return null;
}

/**
 * npm and npx as `ps` shows them: `npm exec polar ...` (npm sets its process title, which becomes
 * the whole first argument), or node running `npm-cli.js` / `npx-cli.js`.
 */
function isNpm(command: string[]): boolean {
  const first = basename(command[0]?.trim().split(/\s+/)[0] ?? "");
  if (first === "npm" || first === "npx") return true;
  return command.slice(1, 3).some((a) => /^np[mx]-cli\.js$/.test(basename(a)));
}

export function isAlive(p: ProcessRef): boolean {
  const info = processInfo(p.pid);
  return info !== null && !info.zombie && info.start === p.start;
}

function processInfo(pid: number): ProcessInfo | null {
  return process.platform === "linux" ? procInfo(pid) : psInfo(pid);
}

/** Linux: /proc/PID/stat (the name in parentheses may hold spaces, so fields count from its end). */
function procInfo(pid: number): ProcessInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((a) => a !== "");
    // Fields after the name: state (3), ppid (4), ..., starttime (22).
    return { pid, ppid: Number(fields[1]), zombie: fields[0] === "Z", start: fields[19] ?? "", command };
  } catch {
    return null;
  }
}

/** Elsewhere (macOS): `ps`, which every Unix has. */
function psInfo(pid: number): ProcessInfo | null {
  try {
    const out = execFileSync("ps", ["-o", "ppid=,stat=,lstart=,command=", "-p", String(pid)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    const m = /^(\d+)\s+(\S+)\s+(\w+\s+\w+\s+\d+\s+[\d:]+\s+\d+)\s+(.*)$/.exec(out);
    if (!m) return null;
    return { pid, ppid: Number(m[1]), zombie: m[2].startsWith("Z"), start: m[3], command: m[4].split(/\s+/) };
  } catch {
    return null;
  }
}
