// CPU time and peak RSS of another process, from /proc (Linux): the stable figures on a noisy machine.
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

/** User + system CPU milliseconds consumed so far by `pid` (not its children). */
export function cpuMs(pid: number): number {
  const { user, system } = cpuSplitMs(pid);
  return user + system;
}

/** User and system CPU milliseconds consumed so far by `pid`, apart (system: the kernel's share). */
export function cpuSplitMs(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which may contain spaces, start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND,
    system: (Number(fields[12]) * 1000) / TICKS_PER_SECOND,
  };
}

/** Peak resident set size of `pid` in MiB (VmHWM). */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : Number.NaN;
}
