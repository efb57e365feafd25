/**
 * Where a session's commands run. Backends: process (embedded default), bwrap, apptainer, docker.
 * Paths given to exec/upload/download are relative to the runtime's work dir unless absolute
 * inside the runtime.
 */
import type { SideService } from "../../shared/schemas/side-service.ts";
import type { LimitHit, SessionLimits } from "./limits.ts";

export interface ExecOptions {
  env?: Record<string, string>;
  /** Relative to the work dir; defaults to it. */
  cwd?: string;
  timeoutMs?: number;
  stdin?: string;
  /** Called with output as it arrives (for logs and progress). */
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** The session limit this command hit (it was killed for it), if any. */
  limit?: LimitHit | null;
}

export interface Runtime {
  readonly id: string;
  /** Host path of the session's work dir (what the harness sees as its cwd). */
  readonly workDir: string;
  /** Host path of the session's private HOME / config dir. */
  readonly homeDir: string;
  /**
   * Base URL at which code inside the runtime reaches the proxy (may differ from the host's
   * URL when the network is cut and a Unix-socket bridge is used).
   */
  readonly proxyUrl: string;
  exec(argv: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Copy a host file or directory into the runtime at `dest`. */
  upload(hostPath: string, dest: string): Promise<void>;
  /** Copy `src` from the runtime to a host path. */
  download(src: string, hostPath: string): Promise<void>;
  /** Kill everything still running and remove the runtime's files. Idempotent. */
  stop(): Promise<void>;
}

export interface RuntimeSpecInput {
  sessionId: string;
  image?: string;
  env: Record<string, string>;
  /** What the task asks for: a backend that cannot enforce one refuses the session (limits.ts). */
  limits: SessionLimits;
  /** The runner's per-session defaults, applied where the backend can enforce them. */
  defaultLimits?: SessionLimits;
  /** The proxy base URL as the host sees it. */
  proxyUrl: string;
  /** Containers started beside this one on a loopback only they share (docker only; side-services.ts). */
  services?: SideService[];
  /**
   * Names of the runner's environment its operator lets side services take (`--service-env`); a
   * service's `{ from_env }` outside them refuses the session (service-env.ts). Never the agent's.
   */
  serviceEnv?: readonly string[];
  /** A judge's: join the side services of the (live) session with this id instead of starting its own. */
  joinServicesOf?: string;
  /** A judge's network (`--allow-verifier-network`): "public" is the engine's default network; else none. */
  network?: "none" | "public";
}

export interface RuntimeFactory {
  readonly backend: string;
  create(spec: RuntimeSpecInput): Promise<Runtime>;
}

export { RuntimeSpecRefused } from "./runtime-spec-refused.ts";
