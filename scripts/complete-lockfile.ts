// Adds lock entries for platform-specific optional packages that `npm install` could not record.
//
// Why: the registry mirror this project is developed against lacks some other platforms' binaries
// (e.g. `@biomejs/cli-darwin-x64` at the pinned version). npm then leaves those optional packages
// out of package-lock.json, and `npm ci` refuses the lock ("Missing: ... from lock file"). A full
// registry would have written these entries; this restores them (version, os, cpu, libc), so
// `npm ci` skips them on Linux as it would skip any foreign-platform binary.
// Run after changing dependencies: `node scripts/complete-lockfile.ts` (idempotent).
import { readFileSync, writeFileSync } from "node:fs";

type Entry = {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
};

const OS: [RegExp, string][] = [
  [/darwin/, "darwin"],
  [/win32|windows/, "win32"],
  [/android/, "android"],
  [/freebsd/, "freebsd"],
  [/linux/, "linux"],
];
const CPU: [RegExp, string][] = [
  [/arm64|aarch64/, "arm64"],
  [/x64|-64(?!\w)|amd64/, "x64"],
  [/ia32|x86(?!_)/, "ia32"],
  [/arm(?!64)/, "arm"],
];

function platformOf(name: string): Pick<Entry, "os" | "cpu" | "libc"> | null {
  const os = OS.find(([re]) => re.test(name))?.[1];
  const cpu = CPU.find(([re]) => re.test(name))?.[1];
  if (!os || !cpu) return null;
  const libc = os === "linux" ? (/musl/.test(name) ? ["musl"] : ["glibc"]) : undefined;
  return { os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
}

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8")) as { packages: Record<string, Entry> };
const added: string[] = [];
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const parentDir = key === "" ? "" : `${key}/`;
    if (lock.packages[`${parentDir}node_modules/${dep}`] || lock.packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    // Only exact-version platform binaries are restored; anything else is a real lock problem.
    if (!platform || !/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range)) continue;
    lock.packages[`node_modules/${dep}`] = {
      version: range,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added.push(`${dep}@${range}`);
  }
}
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  added.length ? `added ${added.length} lock entries: ${added.join(", ")}` : "lock file already complete",
);
