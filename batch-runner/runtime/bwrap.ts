import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, lstatSync, readlinkSync, statSync } from "node:fs";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BridgedRuntime, prepareBridgedSession } from "./bridged-runtime.ts";
import type { WrappedCommand } from "./host-dir-runtime.ts";
import { hostLimits, sessionCgroup } from "./host-limits.ts";
import { refuseBuildImage } from "./image-build-ref.ts";
import { type Runtime, type RuntimeFactory, type RuntimeSpecInput, RuntimeSpecRefused } from "./runtime.ts";
import { HOST_NODE_DIR, type HostBridge, SANDBOX_BRIDGE_SCRIPT } from "./socket-bridge.ts";
import type { SessionDirs } from "./work-dirs.ts";

/** This checkout's root: `{{polar_root}}` agents live under its examples/. */
export const POLAR_ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

/** The unprivileged user the agent runs as inside the sandbox (mapped to the runner's uid outside). */
export const SANDBOX_UID = 1000;

/** What of the host's root a sandbox sees (read-only): the system dirs that hold sh, git, node's libs. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * The /etc entries programs need to start and resolve names; never shadow, sudoers, ssh keys, npmrc or
 * pip.conf (which may hold registry tokens). /etc/passwd and /etc/group are written per session.
 */
const ETC_ENTRIES = [
  "alternatives",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "nsswitch.conf",
  "hosts",
  "host.conf",
  "gai.conf",
  "localtime",
  "timezone",
  "ssl",
  "ca-certificates",
  "ca-certificates.conf",
  "mime.types",
  "magic",
  "gitconfig",
  "os-release",
  "debian_version",
  "bash.bashrc",
  "inputrc",
  "profile",
];

export interface BwrapOptions {
  sessionsRoot?: string;
  /** The bwrap binary (tests may point at a wrapper); resolved to an absolute path on the runner's PATH. */
  bwrapBin?: string;
  /** Host paths bound read-only at the same path (e.g. the harness cache). */
  readOnlyBinds?: string[];
  /**
   * Host paths that must stay invisible even when they lie inside a read-only bind (the store, the
   * sessions root): each gets an empty tmpfs over it.
   */
  hiddenPaths?: string[];
  /**
   * Directories under which `runtime.image` may name a root directory (`--bwrap-image-dir`). A task
   * naming `/` or the store as its "image" would otherwise get the host's files back; none by default.
   */
  imageDirs?: string[];
}

/**
 * bubblewrap without the host's root: a minimal read-only root (system dirs, a few /etc entries, node,
 * the bridge, the harness cache), private writable work dir and home, fresh /tmp, new user, pid, net,
 * ipc and uts namespaces, an unprivileged uid, and no network but the Unix-socket bridge to the proxy.
 * When the command ends, its pid namespace ends with it: nothing it started (setsid or not) survives.
 */
export class BwrapRuntime extends BridgedRuntime {
  private readonly image: string | undefined;
  private readonly bwrapBin: string;
  private readonly hidden: string[];

  constructor(id: string, dirs: SessionDirs, spec: RuntimeSpecInput, bridge: HostBridge, opts: BwrapOptions) {
    super(id, dirs, spec, bridge, opts.readOnlyBinds);
    this.image = spec.image;
    this.bwrapBin = resolveBin(opts.bwrapBin ?? "bwrap");
    this.hidden = opts.hiddenPaths ?? [];
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    const args = bwrapArgs({
      dirs: this.dirs,
      image: this.image,
      cwd,
      readOnly: this.readOnly,
      hidden: this.hidden,
    });
    const inner = this.bridged(argv);
    // bwrap hands its own environment to the sandbox: the clean session env is all it gets.
    return { argv: [this.bwrapBin, ...args, "--", ...inner], env };
  }
}

/** Per-session /etc/passwd and /etc/group naming the sandbox user (git and ssh look themselves up). */
export async function writeSandboxEtc(dirs: SessionDirs): Promise<void> {
  const etc = sandboxEtcDir(dirs);
  await mkdir(etc, { recursive: true });
  await writeFile(
    join(etc, "passwd"),
    `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\npolar:x:${SANDBOX_UID}:${SANDBOX_UID}:polar:${dirs.homeDir}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  await writeFile(join(etc, "group"), `root:x:0:\npolar:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`);
}

function sandboxEtcDir(dirs: SessionDirs): string {
  return join(dirs.root, "etc");
}

/** The bwrap flags for one exec (exported for the argv unit tests). */
export function bwrapArgs(o: {
  dirs: SessionDirs;
  image?: string;
  cwd: string;
  readOnly?: string[];
  hidden?: string[];
}): string[] {
  const root = o.image ? ["--ro-bind", o.image, "/"] : hostSystemRoot(o.dirs);
  // Node, the bridge script, the example agents and the harness cache are bound after the fresh /tmp:
  // they may live under /tmp (a CI checkout, say), which the tmpfs would otherwise hide.
  const roBinds = [HOST_NODE_DIR, SANDBOX_BRIDGE_SCRIPT, join(POLAR_ROOT, "examples"), ...(o.readOnly ?? [])];
  const bound = roBinds.filter((p) => o.image !== undefined || existsSync(p));
  const hide = (o.hidden ?? []).filter((h) => bound.some((b) => h === b || h.startsWith(`${b}/`)));
  return [
    "--die-with-parent",
    "--unshare-all",
    "--unshare-user",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    // No controlling terminal shared with the runner (TIOCSTI).
    "--new-session",
    ...root,
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    // A bound path under /tmp gets its parents made on the fresh tmpfs: read-only ones, so the agent
    // cannot write beside the bound dir (say, into a CI checkout's root).
    ...tmpParents(bound).flatMap((d) => ["--perms", "0555", "--dir", d]),
    ...bound.flatMap((p) => ["--ro-bind", p, p]),
    ...hide.flatMap((p) => ["--tmpfs", p]),
    "--bind",
    o.dirs.workDir,
    o.dirs.workDir,
    "--bind",
    o.dirs.homeDir,
    o.dirs.homeDir,
    // Read-only: it holds only the bridge socket (a connect needs no write to the mount) and lies
    // on the host's disk, outside the session's size-capped volume.
    "--ro-bind",
    o.dirs.runDir,
    o.dirs.runDir,
    // The root itself (bwrap's tmpfs holding the mount points) is read-only too.
    "--remount-ro",
    "/",
    "--chdir",
    o.cwd,
  ];
}

/** The host's system dirs (a symlinked /bin stays a symlink) and the allowlisted /etc entries. */
function hostSystemRoot(dirs: SessionDirs): string[] {
  const out: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    const info = lstatOrNull(dir);
    if (!info) continue;
    if (info.isSymbolicLink()) out.push("--symlink", readlinkSync(dir), dir);
    else if (info.isDirectory()) out.push("--ro-bind", dir, dir);
  }
  for (const name of ETC_ENTRIES) {
    const path = `/etc/${name}`;
    const info = lstatOrNull(path);
    if (!info) continue;
    if (info.isSymbolicLink()) out.push("--symlink", readlinkSync(path), path);
    else out.push("--ro-bind", path, path);
  }
  const etc = sandboxEtcDir(dirs);
  out.push("--ro-bind", join(etc, "passwd"), "/etc/passwd", "--ro-bind", join(etc, "group"), "/etc/group");
  return out;
}

function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** An absolute path for a binary name, looked up on the runner's PATH (never on a session's). */
export function resolveBin(bin: string): string {
  if (bin.includes("/")) return bin;
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(delimiter)) {
    const candidate = join(dir, bin);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return bin;
}

/**
 * Why bwrap cannot sandbox on this host (not installed, no user namespaces), or null when it can:
 * probed with the same namespace and uid flags every session uses.
 */
export function bwrapProblem(bin = "bwrap"): string | null {
  const probe = spawnSync(
    resolveBin(bin),
    [
      "--unshare-all",
      "--unshare-user",
      "--uid",
      String(SANDBOX_UID),
      "--gid",
      String(SANDBOX_UID),
      ...SYSTEM_DIRS.flatMap((d) => {
        const info = lstatOrNull(d);
        if (!info) return [];
        return info.isSymbolicLink() ? ["--symlink", readlinkSync(d), d] : ["--ro-bind", d, d];
      }),
      "--proc",
      "/proc",
      "true",
    ],
    { encoding: "utf8", timeout: 10_000 },
  );
  if (probe.error) return `bwrap is not installed or not runnable (${probe.error.message})`;
  if (probe.status !== 0) return `bwrap cannot create its namespaces here: ${probe.stderr.trim()}`;
  return null;
}

/** The image root's real path, when it lies under an allowed image dir and holds nothing hidden. */
async function allowedImageRoot(image: string, opts: BwrapOptions): Promise<string> {
  const refuse = (why: string) =>
    new RuntimeSpecRefused(`runtime.image ${JSON.stringify(image)} is refused for bwrap: ${why}`);
  const allowed = opts.imageDirs ?? [];
  if (allowed.length === 0) {
    throw refuse(
      "this runner allows no root directories (the operator allowlists them with --bwrap-image-dir)",
    );
  }
  const real = await realpath(image).catch(() => null);
  if (real === null || !statSync(real).isDirectory()) throw refuse("not a directory on this host");
  const dirs = await Promise.all(allowed.map((d) => realpath(d).catch(() => d)));
  if (!dirs.some((d) => real === d || real.startsWith(`${d}/`))) {
    throw refuse("it is outside the directories this runner allows (--bwrap-image-dir)");
  }
  const hidden = await Promise.all((opts.hiddenPaths ?? []).map((h) => realpath(h).catch(() => h)));
  if (hidden.some((h) => h === real || h.startsWith(`${real}/`) || real.startsWith(`${h}/`))) {
    throw refuse("it holds or lies in the store or the sessions dir");
  }
  return real;
}

export function bwrapRuntimeFactory(opts: BwrapOptions = {}): RuntimeFactory {
  return {
    backend: "bwrap",
    async create(spec: RuntimeSpecInput): Promise<Runtime> {
      refuseBuildImage(spec.image, "bwrap");
      const image = spec.image ? await allowedImageRoot(spec.image, opts) : undefined;
      const limits = hostLimits("bwrap", spec);
      const { id, dirs, bridge } = await prepareBridgedSession(spec, opts.sessionsRoot, {
        diskMb: limits.disk_mb,
      });
      const runtime = new BwrapRuntime(id, dirs, { ...spec, image }, bridge, opts);
      try {
        if (!image) await writeSandboxEtc(dirs);
        return runtime.holdTo(limits, await sessionCgroup(id, limits));
      } catch (err) {
        await runtime.stop();
        throw err;
      }
    },
  };
}

/** The directories between /tmp and each path under it, parents first (`/tmp/a/b/c` -> `/tmp/a`, `/tmp/a/b`). */
function tmpParents(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    if (!p.startsWith("/tmp/")) continue;
    const parts = p.split("/").filter(Boolean);
    for (let i = 2; i < parts.length; i++) out.add(`/${parts.slice(0, i).join("/")}`);
  }
  return [...out].sort((a, b) => a.length - b.length || a.localeCompare(b));
}
