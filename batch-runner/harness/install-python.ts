import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
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

/*
 * The pip side of install.ts: a Python harness gets its own venv at `<cache>/<name>@<version>/venv`.
 * A venv is not relocatable (its console scripts carry the absolute path of its python), so it
 * is built in place under the install lock, and the marker written last is what "installed"
 * means: a prefix without it is wiped and rebuilt.
 *
 * Mirrors and offline GPU nodes: POLAR_PIP_INDEX_URL (`--index-url`), POLAR_PIP_FIND_LINKS
 * (`--find-links`, a directory of wheels), POLAR_PIP_OFFLINE=1 (`--no-index`: only those wheels),
 * POLAR_PIP_CACHE (`--cache-dir`), POLAR_PYTHON (the interpreter that creates the venv), or
 * POLAR_PYTHON3_12 and so on for a preset that needs a given version.
 */

export interface PythonInstallable {
  name: string;
  version: string;
  pipPackages: readonly string[];
  /** e.g. "3.12": the venv is made with `python3.12` (POLAR_PYTHON3_12 overrides the path). */
  python?: string;
}

/**
 * The interpreter that creates the venv: for a preset that needs a version, POLAR_PYTHON3_12 (and
 * so on), else that version installed by pyenv (its shim refuses versions that are not selected),
 * else `python3.12` from PATH; otherwise POLAR_PYTHON or python3.
 */
export function pythonFor(preset: Pick<PythonInstallable, "python">, opts: InstallOptions): string {
  const wanted = preset.python;
  if (!wanted) return opts.python ?? (process.env.POLAR_PYTHON || "python3");
  const fromEnv = process.env[`POLAR_PYTHON${wanted.replace(".", "_")}`];
  if (fromEnv) return fromEnv;
  const versions = join(process.env.PYENV_ROOT || join(homedir(), ".pyenv"), "versions");
  try {
    const installed = readdirSync(versions)
      .filter((v) => v === wanted || v.startsWith(`${wanted}.`))
      .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
      .map((v) => join(versions, v, "bin", `python${wanted}`))
      .filter((path) => existsSync(path));
    const newest = installed.at(-1);
    if (newest) return newest;
  } catch {
    // no pyenv here
  }
  return `python${wanted}`;
}

export function venvBin(prefix: string): string {
  return join(prefix, "venv", "bin");
}

export async function installPythonHarness(
  preset: PythonInstallable,
  opts: InstallOptions = {},
): Promise<InstalledHarness> {
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const prefix = prefixFor(cacheDir, preset.name, preset.version);
  const binDir = venvBin(prefix);
  if (await isInstalled(prefix, preset.pipPackages)) return { binDir, prefix, installed: false };

  await mkdir(cacheDir, { recursive: true });
  const lock = `${prefix}.lock`;
  await acquireLock(lock, opts.lockTimeoutMs ?? STALE_LOCK_MS);
  try {
    if (await isInstalled(prefix, preset.pipPackages)) return { binDir, prefix, installed: false };
    await rm(prefix, { recursive: true, force: true });
    await mkdir(prefix, { recursive: true });
    opts.log?.(`installing ${preset.pipPackages.join(" ")} into a venv in ${prefix}`);
    const python = pythonFor(preset, opts);
    await run(python, ["-m", "venv", join(prefix, "venv")], "create the venv");
    await run(
      join(binDir, "python"),
      pipArgs(preset.pipPackages),
      `pip install ${preset.pipPackages.join(" ")}`,
    );
    await writeFile(
      join(prefix, MARKER),
      JSON.stringify({ packages: preset.pipPackages, installed_at: new Date().toISOString() }),
    );
    return { binDir, prefix, installed: true };
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

function pipArgs(packages: readonly string[]): string[] {
  const args = ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"];
  const index = process.env.POLAR_PIP_INDEX_URL;
  if (index) args.push("--index-url", index);
  const findLinks = process.env.POLAR_PIP_FIND_LINKS;
  if (findLinks) args.push("--find-links", findLinks);
  if (process.env.POLAR_PIP_OFFLINE === "1") args.push("--no-index");
  const cache = process.env.POLAR_PIP_CACHE;
  if (cache) args.push("--cache-dir", cache);
  return [...args, ...packages];
}

async function isInstalled(prefix: string, packages: readonly string[]): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(join(prefix, MARKER), "utf8"));
    return (
      JSON.stringify(marker.packages) === JSON.stringify(packages) &&
      existsSync(join(venvBin(prefix), "python"))
    );
  } catch {
    return false;
  }
}

function run(command: string, args: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", (err) => reject(new Error(`could not start ${command} to ${what}: ${err}`)));
    child.on("close", (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${what} failed (exit ${code}):\n${output.slice(-4000)}`));
    });
  });
}

/**
 * The installations the Python presets' venvs link to (a venv's python is a symlink to its base
 * interpreter, whose stdlib lives beside it): the sandbox binds them read-only next to the cache.
 */
export function pythonRuntimeDirs(presets: readonly Pick<PythonInstallable, "python">[]): string[] {
  const dirs = new Set<string>();
  for (const preset of presets) {
    try {
      const out = execFileSync(pythonFor(preset, {}), ["-c", "import sys; print(sys.base_prefix)"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
        timeout: 10_000,
      }).trim();
      if (out) dirs.add(out);
    } catch {
      // That interpreter is missing here: its preset's install reports it.
    }
  }
  return [...dirs];
}
