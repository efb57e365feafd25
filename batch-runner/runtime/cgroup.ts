import { accessSync, constants, existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { LimitHit, SessionLimits } from "./limits.ts";
import { shellQuote } from "./shell-quote.ts";

/** What a session cgroup controls here: one directory per controller (v1) or one for all (v2). */
interface CgroupLayout {
  version: 1 | 2;
  /** Parent directories the runner may create session groups in, by controller. */
  parents: Partial<Record<"memory" | "pids" | "cpu", string>>;
  /** Why a controller is missing, for the refusal message. */
  missing: string;
}

let cached: CgroupLayout | undefined;

export interface CgroupCounts {
  oomKills: number;
  forksRefused: number;
}

/**
 * Where this runner can create per-session cgroups: cgroup v1 controllers it may write (root, as
 * on this repo's CI VM), else a cgroup v2 group whose subtree has memory and pids delegated to it
 * (systemd `Delegate=yes`, a container's own namespace). Read once per process.
 */
export function cgroupLayout(): CgroupLayout {
  if (cached) return cached;
  cached = probeLayout();
  return cached;
}

function probeLayout(): CgroupLayout {
  let self: string;
  try {
    self = readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    return { version: 1, parents: {}, missing: "no /proc/self/cgroup (not Linux)" };
  }
  const v1: CgroupLayout["parents"] = {};
  let v2Path: string | null = null;
  for (const line of self.trim().split("\n")) {
    const [, controllers, path] = line.split(":");
    if (controllers === "" && path) v2Path = path;
    for (const c of controllers.split(",")) {
      if (c !== "memory" && c !== "pids" && c !== "cpu") continue;
      const dir = join("/sys/fs/cgroup", c, path);
      if (writable(dir)) v1[c] = dir;
    }
  }
  if (Object.keys(v1).length > 0) {
    const lacking = (["memory", "pids", "cpu"] as const).filter((c) => !v1[c]);
    return { version: 1, parents: v1, missing: `cgroup v1 controller(s) ${lacking.join(", ")} not writable` };
  }
  if (v2Path !== null) {
    const dir = join(v2Mount(), v2Path);
    const delegated = v2Delegate(dir);
    if (delegated.length > 0) {
      const parents = Object.fromEntries(delegated.map((c) => [c, dir]));
      return { version: 2, parents, missing: `cgroup v2 controller(s) not delegated to ${dir}` };
    }
    return {
      version: 2,
      parents: {},
      missing: `the runner's cgroup v2 group ${dir} has no memory/pids controllers delegated to it (run it in a delegated scope, e.g. systemd Delegate=yes)`,
    };
  }
  return { version: 1, parents: {}, missing: "no cgroup controllers this runner may write (not root?)" };
}

function v2Mount(): string {
  const unified = "/sys/fs/cgroup/unified";
  return existsSync(join(unified, "cgroup.controllers")) ? unified : "/sys/fs/cgroup";
}

/** The controllers a v2 group can hand to children: enabled in its subtree, or enabled now. */
function v2Delegate(dir: string): ("memory" | "pids" | "cpu")[] {
  if (!writable(dir)) return [];
  let available: string[];
  try {
    available = readFileSync(join(dir, "cgroup.controllers"), "utf8").trim().split(/\s+/);
  } catch {
    return [];
  }
  const wanted = (["memory", "pids", "cpu"] as const).filter((c) => available.includes(c));
  try {
    // Fails (EBUSY) while the group itself holds processes: the operator must delegate a leaf-free group.
    writeFileSync(join(dir, "cgroup.subtree_control"), wanted.map((c) => `+${c}`).join(" "));
  } catch {
    // Maybe already enabled.
  }
  const enabled = readFileSync(join(dir, "cgroup.subtree_control"), "utf8").trim().split(/\s+/);
  return wanted.filter((c) => enabled.includes(c));
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return existsSync(join(dir, "cgroup.procs"));
  } catch {
    return false;
  }
}

/** Why `memory_mb`, `pids` or `cpus` cannot be enforced through cgroups here, or true. */
export function cgroupSupport(): { memory_mb: true | string; pids: true | string; cpus: true | string } {
  const l = cgroupLayout();
  return {
    memory_mb: l.parents.memory ? true : l.missing,
    pids: l.parents.pids ? true : l.missing,
    cpus: l.parents.cpu ? true : l.missing,
  };
}

/**
 * One session's cgroup(s): every command of the session starts inside (`enter`), the kernel holds
 * it to its memory, process and CPU limits, and the runner reads whether one was hit and kills
 * whatever is left in it at teardown (a process that left the session's process group included).
 */
export class SessionCgroup {
  private readonly layout: CgroupLayout;
  /** The session group's directory per controller. */
  private readonly dirs: Partial<Record<"memory" | "pids" | "cpu", string>>;

  private constructor(layout: CgroupLayout, dirs: Partial<Record<"memory" | "pids" | "cpu", string>>) {
    this.layout = layout;
    this.dirs = dirs;
  }

  static async create(name: string, limits: SessionLimits): Promise<SessionCgroup | null> {
    const layout = cgroupLayout();
    const wanted: ("memory" | "pids" | "cpu")[] = [];
    if (limits.memory_mb !== undefined) wanted.push("memory");
    if (limits.pids !== undefined) wanted.push("pids");
    if (limits.cpus !== undefined) wanted.push("cpu");
    if (wanted.length === 0) return null;
    const dirs: SessionCgroup["dirs"] = {};
    for (const c of wanted) {
      const parent = layout.parents[c];
      if (!parent) throw new Error(`cgroup controller ${c}: ${layout.missing}`);
      const dir = join(parent, `polar-${name}`);
      await mkdir(dir, { recursive: true });
      dirs[c] = dir;
    }
    const group = new SessionCgroup(layout, dirs);
    try {
      await group.apply(limits);
    } catch (err) {
      await group.remove();
      throw err;
    }
    return group;
  }

  private async apply(limits: SessionLimits): Promise<void> {
    const v1 = this.layout.version === 1;
    if (this.dirs.memory && limits.memory_mb !== undefined) {
      const bytes = String(limits.memory_mb * 1024 * 1024);
      if (v1) {
        await writeFile(join(this.dirs.memory, "memory.limit_in_bytes"), bytes);
        // With swap on, the limit must cover memory+swap too or the session swaps the node to death.
        const memsw = join(this.dirs.memory, "memory.memsw.limit_in_bytes");
        if (existsSync(memsw)) await writeFile(memsw, bytes);
      } else {
        await writeFile(join(this.dirs.memory, "memory.max"), bytes);
        await writeFile(join(this.dirs.memory, "memory.swap.max"), "0").catch(() => {});
      }
    }
    if (this.dirs.pids && limits.pids !== undefined) {
      await writeFile(join(this.dirs.pids, "pids.max"), String(limits.pids));
    }
    if (this.dirs.cpu && limits.cpus !== undefined) {
      const period = 100_000;
      const quota = Math.max(1000, Math.round(limits.cpus * period));
      if (v1) {
        await writeFile(join(this.dirs.cpu, "cpu.cfs_period_us"), String(period));
        await writeFile(join(this.dirs.cpu, "cpu.cfs_quota_us"), String(quota));
      } else {
        await writeFile(join(this.dirs.cpu, "cpu.max"), `${quota} ${period}`);
      }
    }
  }

  /** Distinct group directories (v2 has one for all controllers). */
  private groupDirs(): string[] {
    return [...new Set(Object.values(this.dirs))];
  }

  /**
   * argv that joins the session's group(s) and then runs `argv`: the shell moves itself in before
   * it execs, so nothing the command starts is ever outside the limits.
   */
  enter(argv: string[]): string[] {
    const joins = this.groupDirs()
      .map((d) => `echo $$ > ${shellQuote(join(d, "cgroup.procs"))}`)
      .join(" && ");
    return ["/bin/sh", "-c", `${joins} && exec "$@"`, "polar-cgroup", ...argv];
  }

  /** The kernel's counts of limit hits in this session so far: OOM kills and refused forks. */
  counts(): CgroupCounts {
    const oomFile = this.layout.version === 1 ? "memory.oom_control" : "memory.events";
    return {
      oomKills: this.dirs.memory ? counter(join(this.dirs.memory, oomFile), "oom_kill") : 0,
      forksRefused: this.dirs.pids ? counter(join(this.dirs.pids, "pids.events"), "max") : 0,
    };
  }

  /** The limit enforced since `base` (taken when a command started), if any. */
  hitSince(base: CgroupCounts): LimitHit | null {
    const now = this.counts();
    if (now.oomKills > base.oomKills) return "memory";
    if (now.forksRefused > base.forksRefused) return "pids";
    return null;
  }

  /** SIGKILLs every process in the group until none is left. */
  async killAll(): Promise<void> {
    const dir = this.groupDirs()[0];
    if (!dir) return;
    if (this.layout.version === 2) await writeFile(join(dir, "cgroup.kill"), "1").catch(() => {});
    await killProcsIn(dir);
  }

  /** Kills what is left and removes the group(s); a group that still holds a process stays, and says so. */
  async remove(): Promise<void> {
    await this.killAll();
    for (const dir of this.groupDirs()) {
      for (let i = 0; ; i++) {
        try {
          await rmdir(dir);
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOENT") break;
          // EBUSY until the last killed process has been reaped.
          if (i >= 100) throw new Error(`cgroup ${dir} not removed: ${(err as Error).message}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    }
  }
}

/** SIGKILLs every process in a group until none is left (each round frees slots a fork bomb refills). */
async function killProcsIn(dir: string): Promise<void> {
  for (let round = 0; round < 200; round++) {
    const pids = await procsOf(dir);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone.
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function procsOf(dir: string): Promise<number[]> {
  const text = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** A `name N` line of a cgroup events/control file; 0 when absent. */
function counter(file: string, name: string): number {
  try {
    const line = readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(" ")[1]) || 0 : 0;
  } catch {
    return 0;
  }
}

/** Kills and removes the cgroups a dead runner left for session `runtimeId` (the orphan reaper). */
export async function removeSessionCgroups(runtimeId: string): Promise<void> {
  for (const parent of new Set(Object.values(cgroupLayout().parents))) {
    const dir = join(parent, `polar-${runtimeId}`);
    if (!existsSync(dir)) continue;
    await killProcsIn(dir);
    for (let i = 0; i < 50; i++) {
      try {
        await rmdir(dir);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}
