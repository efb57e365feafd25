import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import type { HarnessOutcome, HarnessPreset } from "../../batch-runner/harness/preset.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import type { ExecResult, Runtime } from "../../batch-runner/runtime/runtime.ts";
import { AgentSpec } from "../../shared/schemas/task.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import type { HarnessStack } from "./harness-stack.ts";
import { auditStrace, type ConnectCall } from "./strace-connects.ts";

export interface SessionRun {
  runtime: Runtime;
  result: ExecResult;
  outcome: HarnessOutcome;
  /** Every connect() the harness and its children made (when traced). */
  connects: ConnectCall[] | null;
  taskId: string;
  sessionId: string;
}

export interface SessionOptions {
  preset: HarnessPreset;
  binDir: string;
  stack: HarnessStack;
  instruction: string;
  taskId: string;
  sessionId: string;
  sessionsRoot: string;
  settings?: Record<string, unknown>;
  /** Run the CLI under `strace -f -e trace=connect` and return what it connected to. */
  traceConnects?: boolean;
  timeoutMs?: number;
}

/**
 * One session the way a runner does it (INIT: runtime, token, config files; RUNNING: the CLI
 * headless against the proxy), leaving POSTRUN (reconstruction) to the caller.
 */
export async function runHarnessSession(opts: SessionOptions): Promise<SessionRun> {
  const runtime = await processRuntimeFactory({ sessionsRoot: opts.sessionsRoot }).create({
    sessionId: opts.sessionId,
    env: {},
    limits: {},
    proxyUrl: opts.stack.proxy.url,
  });
  const token = await mintSessionToken(
    { sessionId: opts.sessionId, taskId: opts.taskId },
    opts.stack.signingKey,
  );
  const ctx = {
    agent: AgentSpec.parse({
      harness: opts.preset.name,
      settings: { max_retries: 0, ...opts.settings },
    }),
    instruction: opts.instruction,
    proxyUrl: runtime.proxyUrl,
    sessionToken: token,
    homeDir: runtime.homeDir,
    workDir: runtime.workDir,
  };
  for (const [path, text] of Object.entries(opts.preset.configFiles(ctx))) {
    const full = isAbsolute(path) ? path : join(runtime.homeDir, path);
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, text);
  }
  const inv = opts.preset.invocation(ctx, opts.binDir);
  const traceFile = join(runtime.homeDir, "..", "connects.strace");
  const argv = opts.traceConnects
    ? [
        "strace",
        "-f",
        "-qq",
        "-e",
        process.env.STRACE_EXPR ?? "trace=connect",
        "-s",
        "200",
        "-o",
        traceFile,
        ...inv.argv,
      ]
    : inv.argv;
  const result = await runtime.exec(argv, {
    env: inv.env,
    stdin: inv.stdin,
    timeoutMs: opts.timeoutMs ?? 90_000,
  });
  const outcome = opts.preset.parseOutput(result.stdout, result.stderr, result.exitCode);
  const connects = opts.traceConnects
    ? auditStrace(await readFile(traceFile, "utf8").catch(() => ""), "/nonexistent").connects
    : null;
  return { runtime, result, outcome, connects, taskId: opts.taskId, sessionId: opts.sessionId };
}
