import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unmountUnder } from "../../batch-runner/runtime/disk-volume.ts";
import { decodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { TaskRequestInput } from "../../shared/schemas/task.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "./policy.ts";
import { startProxy, type TestProxy } from "./proxy.ts";

export const MINI_AGENT = "node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}";

/** The real parts a runner needs, on 127.0.0.1: dry-run policy, proxy with token auth, a directory store. */
export interface RunnerStack {
  root: string;
  store: DirectoryStore;
  policy: PolicyServer;
  proxy: TestProxy;
  signingKey: string;
  close(): Promise<void>;
}

export async function startRunnerStack(): Promise<RunnerStack> {
  const root = await mkdtemp(join(tmpdir(), "polar-stack-"));
  const store = new DirectoryStore(join(root, "store"));
  const signingKey = "test-signing-key-0123456789abcdef";
  const policy = await startPolicy();
  const proxy = await startProxy({ upstream: policy.url, store, auth: { signingKey }, log: () => {} });
  return {
    root,
    store,
    policy,
    proxy,
    signingKey,
    async close() {
      await proxy.close();
      await policy.close();
      // A runner a test killed leaves its sessions' volumes mounted (as root): rm cannot remove a mount point.
      await unmountUnder(root);
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** A shell-harness task driven by a polar-script for the mini agent. */
export function scriptedTask(
  taskId: string,
  steps: string[],
  extra: Partial<TaskRequestInput> = {},
): TaskRequestInput {
  return {
    task_id: taskId,
    instruction: scriptMessage(steps),
    timeout_seconds: 30,
    agent: { harness: "shell", settings: { command: MINI_AGENT } },
    ...extra,
  };
}

export async function readResult(
  store: DirectoryStore,
  taskId: string,
  sessionId: string,
): Promise<SessionResult | null> {
  const bytes = await store.get(keys.result(taskId, sessionId));
  return bytes ? SessionResult.parse(JSON.parse(new TextDecoder().decode(bytes))) : null;
}

/** Every session result stored for a task, in key order. */
export async function readTaskResults(store: DirectoryStore, taskId: string): Promise<SessionResult[]> {
  const out: SessionResult[] = [];
  for (const key of await store.list(keys.resultsOfTask(taskId))) {
    const bytes = await store.get(key);
    if (bytes) out.push(SessionResult.parse(JSON.parse(new TextDecoder().decode(bytes))));
  }
  return out;
}

export async function capturesOf(
  store: DirectoryStore,
  taskId: string,
  sessionId: string,
): Promise<CaptureRecord[]> {
  const out: CaptureRecord[] = [];
  for (const key of await store.list(keys.capturesOfSession(taskId, sessionId))) {
    const bytes = await store.get(key);
    if (bytes) out.push(await decodeCapture(bytes));
  }
  return out;
}

export async function waitFor<T>(
  probe: () => Promise<T | null | undefined | false>,
  what: string,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
