import { readFileSync, statfsSync } from "node:fs";
import { totalmem } from "node:os";

/** What the per-session defaults are derived from (runner-defaults.ts), read from this node. */
export function nodeResources(sessionsRoot?: string): {
  totalMemBytes: number;
  threadsMax: number;
  freeDiskBytes?: number;
} {
  let threadsMax = 32_768;
  try {
    threadsMax = Number(readFileSync("/proc/sys/kernel/threads-max", "utf8").trim()) || threadsMax;
  } catch {
    // Not Linux: the conservative figure above.
  }
  let freeDiskBytes: number | undefined;
  if (sessionsRoot !== undefined) {
    try {
      const s = statfsSync(sessionsRoot);
      freeDiskBytes = s.bavail * s.bsize;
    } catch {
      // Not made yet: no disk default.
    }
  }
  return { totalMemBytes: totalmem(), threadsMax, freeDiskBytes };
}
