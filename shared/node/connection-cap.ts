import { readFileSync } from "node:fs";
import type { Server } from "node:net";

/** The process's soft descriptor limit (Linux: /proc/self/limits), or null where it cannot be read. */
export function openFilesLimit(): number | null {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    if (soft === "unlimited") return null;
    const n = Number(soft);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/**
 * A server's connection cap where none is given: a quarter of the descriptor limit, so the proxy's
 * clients cannot take the descriptors the rest of its process needs (in `polar run`, the runner and
 * its session bridges, two each per bridged connection, plus the store and the engine pool).
 */
export function defaultConnectionCap(): number {
  const limit = openFilesLimit();
  return limit === null ? 16_384 : Math.max(64, Math.floor(limit / 4));
}

/**
 * Holds `server` to `max` open connections: past it Node closes a new connection right after
 * accepting it, and this says so in the log (once a minute at most).
 */
export function capConnections(server: Server, max: number, log?: (line: string) => void): void {
  server.maxConnections = max;
  let dropped = 0;
  let lastLog = 0;
  server.on("drop", () => {
    dropped++;
    const now = Date.now();
    if (log && now - lastLog >= 60_000) {
      lastLog = now;
      log(`connection cap ${max} reached: new connections are closed on accept (${dropped} so far)`);
    }
  });
}
