import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  acquireLock,
  defaultCacheDir,
  type InstalledHarness,
  type InstallOptions,
  MARKER,
  prefixFor,
  STALE_LOCK_MS,
} from "./install-cache.ts";
import { installPythonHarness } from "./install-python.ts";
import type { HarnessPreset } from "./preset.ts";

export { defaultCacheDir, type InstalledHarness, type InstallOptions, prefixFor } from "./install-cache.ts";

/*
 * Installs a preset's CLI, at its pinned version, into `<cacheDir>/<name>@<version>` once; every
 * later session on the machine reuses it. Concurrent runners (or test files) wait on a lock dir
 * instead of racing npm into one prefix, and an install lands by rename, so a crash mid-install
 * never leaves a half-filled prefix that looks installed.
 */

type Installable = Pick<HarnessPreset, "name" | "npmPackage" | "version" | "pipPackages" | "python">;

/** Returns null for presets that install nothing (`shell`). */
export async function installHarness(
  preset: Installable,
  opts: InstallOptions = {},
): Promise<InstalledHarness | null> {
  const { npmPackage, version, name } = preset;
  if (preset.pipPackages?.length && version) {
    return installPythonHarness(
      { name, version, pipPackages: preset.pipPackages, python: preset.python },
      opts,
    );
  }
  if (!npmPackage || !version) return null;
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const prefix = prefixFor(cacheDir, name, version);
  const binDir = join(prefix, "node_modules", ".bin");
  if (await isInstalled(prefix, npmPackage, version)) return { binDir, prefix, installed: false };

  await mkdir(cacheDir, { recursive: true });
  const lock = `${prefix}.lock`;
  await acquireLock(lock, opts.lockTimeoutMs ?? STALE_LOCK_MS);
  try {
    // Another process may have finished while we waited for the lock.
    if (await isInstalled(prefix, npmPackage, version)) return { binDir, prefix, installed: false };
    const staging = `${prefix}.staging-${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    opts.log?.(
      `installing ${npmPackage}@${version} into ${prefix} (once per machine; npm can take a minute)`,
    );
    const started = Date.now();
    const elapsed = () => `${Math.round((Date.now() - started) / 1000)}s`;
    // npm is silent until it is done: say it is still at work, so a slow install does not look hung.
    const ticker = setInterval(
      () => opts.log?.(`still installing ${npmPackage}@${version} (${elapsed()})`),
      opts.progressEveryMs ?? 5000,
    );
    try {
      await runNpm(opts, staging, `${npmPackage}@${version}`);
    } finally {
      clearInterval(ticker);
    }
    opts.log?.(`installed ${npmPackage}@${version} in ${elapsed()}`);
    await writeFile(
      join(staging, MARKER),
      JSON.stringify({ package: npmPackage, version, installed_at: new Date().toISOString() }),
    );
    await rm(prefix, { recursive: true, force: true });
    // .bin links are relative, so the tree stays valid after the rename.
    await rename(staging, prefix);
    if (!(await isInstalled(prefix, npmPackage, version))) {
      throw new Error(`npm installed ${npmPackage}@${version} but its bin is missing in ${binDir}`);
    }
    return { binDir, prefix, installed: true };
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Installed = marker written and every bin the package declares present in `.bin`. */
async function isInstalled(prefix: string, pkg: string, version: string): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(join(prefix, MARKER), "utf8"));
    if (marker.package !== pkg || marker.version !== version) return false;
    const manifest = JSON.parse(await readFile(join(prefix, "node_modules", pkg, "package.json"), "utf8"));
    const bins =
      typeof manifest.bin === "string" ? [pkg.split("/").at(-1) ?? pkg] : Object.keys(manifest.bin ?? {});
    return bins.every((bin) => existsSync(join(prefix, "node_modules", ".bin", bin)));
  } catch {
    return false;
  }
}

function runNpm(opts: InstallOptions, prefix: string, spec: string): Promise<void> {
  const npmCache = opts.npmCache ?? process.env.POLAR_NPM_CACHE;
  const offline = opts.offline ?? process.env.POLAR_NPM_OFFLINE === "1";
  const args = ["install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund"];
  args.push("--no-update-notifier", "--loglevel=error");
  if (npmCache) args.push("--cache", npmCache, "--prefer-offline");
  if (offline) args.push("--offline");
  const registry = opts.registry ?? process.env.POLAR_NPM_REGISTRY;
  if (registry) args.push("--registry", registry);
  args.push(spec);
  return new Promise((resolve, reject) => {
    const child = spawn(opts.npm ?? "npm", args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", (err) => reject(new Error(`could not start npm to install ${spec}: ${err}`)));
    child.on("close", (code) => {
      if (code === 0) resolve();
      else reject(new Error(`npm install ${spec} failed (exit ${code}):\n${output.slice(-4000)}`));
    });
  });
}
