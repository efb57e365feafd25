import { fileURLToPath } from "node:url";
import { BridgedRuntime, prepareBridgedSession } from "./bridged-runtime.ts";
import type { WrappedCommand } from "./host-dir-runtime.ts";
import type { Runtime, RuntimeFactory, RuntimeSpecInput } from "./runtime.ts";
import { HOST_NODE_DIR, type HostBridge } from "./socket-bridge.ts";

/** This checkout's root: the sandbox bridge script and `{{polar_root}}` agents live in it. */
export const POLAR_ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

import type { SessionDirs } from "./work-dirs.ts";

export interface BwrapOptions {
  sessionsRoot?: string;
  /** The bwrap binary (tests may point at a wrapper). */
  bwrapBin?: string;
  /** Host paths bound read-only at the same path when an image root hides the host's (e.g. the harness cache). */
  readOnlyBinds?: string[];
}

/**
 * bubblewrap: a read-only root (the host's, or an image root dir), private writable work dir and home,
 * fresh /tmp, and no network (`--unshare-net`) except the Unix-socket bridge to the proxy.
 */
export class BwrapRuntime extends BridgedRuntime {
  private readonly image: string | undefined;
  private readonly bwrapBin: string;

  constructor(id: string, dirs: SessionDirs, spec: RuntimeSpecInput, bridge: HostBridge, opts: BwrapOptions) {
    super(id, dirs, spec, bridge, opts.readOnlyBinds);
    this.image = spec.image;
    this.bwrapBin = opts.bwrapBin ?? "bwrap";
  }

  protected wrap(argv: string[], cwd: string, env: Record<string, string>): WrappedCommand {
    const args = bwrapArgs({ dirs: this.dirs, image: this.image, cwd, readOnly: this.readOnly });
    const inner = this.bridged(argv);
    // bwrap hands its own environment to the sandbox: the clean session env is all it gets.
    return { argv: [this.bwrapBin, ...args, "--", ...inner], env: env };
  }
}

/** The bwrap flags for one exec (exported for the argv unit tests). */
export function bwrapArgs(o: {
  dirs: SessionDirs;
  image?: string;
  cwd: string;
  readOnly?: string[];
}): string[] {
  const root = o.image ? ["--ro-bind", o.image, "/"] : ["--ro-bind", "/", "/"];
  // The host's node, this checkout (the bridge script, example agents) and the harness cache are
  // bound in read-only: an image root lacks them, and with the host root they may live under /tmp
  // (a CI checkout, say), which the fresh /tmp below would hide.
  const bridgeBinds = [HOST_NODE_DIR, POLAR_ROOT, ...(o.readOnly ?? [])].flatMap((p) => ["--ro-bind", p, p]);
  return [
    "--die-with-parent",
    "--unshare-all",
    ...root,
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    // Fresh /tmp and /run: no host sockets (e.g. a container engine's) are reachable through the fs.
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/run",
    ...bridgeBinds,
    "--bind",
    o.dirs.workDir,
    o.dirs.workDir,
    "--bind",
    o.dirs.homeDir,
    o.dirs.homeDir,
    "--bind",
    o.dirs.runDir,
    o.dirs.runDir,
    "--chdir",
    o.cwd,
  ];
}

export function bwrapRuntimeFactory(opts: BwrapOptions = {}): RuntimeFactory {
  return {
    backend: "bwrap",
    async create(spec: RuntimeSpecInput): Promise<Runtime> {
      const { id, dirs, bridge } = await prepareBridgedSession(spec, opts.sessionsRoot);
      return new BwrapRuntime(id, dirs, spec, bridge, opts);
    },
  };
}
