import { cleanEnv, HostDirRuntime } from "./host-dir-runtime.ts";
import { runtimeIdOf } from "./process.ts";
import type { Runtime, RuntimeSpecInput } from "./runtime.ts";
import {
  BRIDGE_PORT,
  bridgedArgv,
  HOST_NODE_DIR,
  type HostBridge,
  sandboxProxyUrl,
  startHostBridge,
} from "./socket-bridge.ts";
import { createSessionDirs, defaultSessionsRoot, existingPaths, type SessionDirs } from "./work-dirs.ts";

/**
 * What the sandboxed backends (bwrap, apptainer, docker) share: no network of their own, so commands
 * reach the proxy through the Unix-socket bridge, which lives as long as the runtime.
 */
export abstract class BridgedRuntime extends HostDirRuntime {
  readonly id: string;
  readonly proxyUrl: string;
  protected readonly dirs: SessionDirs;
  protected readonly baseEnv: Record<string, string>;
  protected readonly bridge: HostBridge;
  /** The requested read-only binds that exist on this host (a missing one would fail every exec). */
  protected readonly readOnly: string[];
  /** The loopback port of the in-sandbox half of the bridge (another for a judge on the agent's loopback). */
  protected readonly bridgePort: number;

  constructor(
    id: string,
    dirs: SessionDirs,
    spec: RuntimeSpecInput,
    bridge: HostBridge,
    readOnlyBinds: string[] | undefined,
    bridgePort: number = BRIDGE_PORT,
  ) {
    super();
    this.bridgePort = bridgePort;
    this.id = id;
    this.dirs = dirs;
    this.bridge = bridge;
    this.readOnly = existingPaths(readOnlyBinds);
    this.proxyUrl = sandboxProxyUrl(spec.proxyUrl, bridgePort);
    const env = cleanEnv(dirs.homeDir, spec.env);
    // The runner's node is bound in; the sandbox's own `node` (if any) may be older than the harnesses need.
    this.baseEnv = { ...env, PATH: `${HOST_NODE_DIR}/bin:${env.PATH}` };
  }

  /** argv as run inside the sandbox: behind the in-sandbox half of the bridge, on the host's node. */
  protected bridged(argv: string[]): string[] {
    return bridgedArgv(`${HOST_NODE_DIR}/bin/node`, this.bridge.socketPath, argv, this.bridgePort);
  }

  protected override async teardown(): Promise<void> {
    await this.bridge.close();
  }
}

/** A container or instance name for a runtime id: container engines accept only [A-Za-z0-9_.-]. */
export function containerNameOf(runtimeId: string): string {
  return `polar-${runtimeId.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
}

/** A new session's id, dirs and proxy bridge: what every sandboxed factory prepares first. */
/** Checked before any session dir or bridge exists, so a task without an image leaks nothing. */
export function requireImage(spec: RuntimeSpecInput, message: string): string {
  if (!spec.image) throw new Error(message);
  return spec.image;
}

export async function prepareBridgedSession(
  spec: RuntimeSpecInput,
  sessionsRoot: string | undefined,
  opts: { diskMb?: number } = {},
): Promise<{ id: string; dirs: SessionDirs; bridge: HostBridge }> {
  const id = runtimeIdOf(spec.sessionId);
  const dirs = await createSessionDirs(sessionsRoot ?? defaultSessionsRoot(), id, opts);
  const bridge = await startHostBridge(dirs.runDir, spec.proxyUrl);
  return { id, dirs, bridge };
}

/** Starts a long-lived sandbox; one that fails to start is stopped (bridge and dirs released) first. */
export async function startOrStop<R extends Runtime & { start(): Promise<void> }>(runtime: R): Promise<R> {
  try {
    await runtime.start();
  } catch (err) {
    await runtime.stop();
    throw err;
  }
  return runtime;
}
