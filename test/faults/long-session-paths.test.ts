import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import { MAX_SOCKET_PATH_BYTES } from "../../batch-runner/runtime/socket-bridge.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { readTaskResults } from "../support/runner-stack.ts";

/*
 * Issue 41, item 18: a session's proxy socket lives in its run dir, under the sessions dir and the
 * session's id; past the 108 bytes of a Unix socket address the bridge could not listen (`listen
 * EINVAL`), so a deep sessions dir or a long task id broke every session, or only its judge (whose
 * runtime id is 5 bytes longer). One `polar run` here, with a 200-byte sessions dir and a 100-byte
 * task id: the agent and its judge both reach the proxy, and a judge that cannot start ends its
 * session ERROR with the reason, never a quiet reward 0.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const problem = bwrapProblem();
if (problem && process.env.CI === "true")
  throw new Error(`long-session-paths: required under CI but ${problem}`);
if (problem) console.warn(`long-session-paths: skipped: ${problem}`);

const tag = randomBytes(4).toString("hex");
const LONG_ID = `l${tag}-${"x".repeat(100 - 10)}`;
const NO_JUDGE = `l${tag}-no-judge`;
const agent = "node {{polar_root}}/examples/agents/mini-agent.mjs {{instruction}}";
const instruction =
  "Create hello.txt.\n\n```polar-script\nshell: echo hi > hello.txt\nshell: cat hello.txt\nsay: Done.\n```\n";
const judged = { strategy: "test_on_output", config: { command: "cat hello.txt", expected_lines: ["hi"] } };

const TASKS = [
  {
    task_id: LONG_ID,
    instruction,
    timeout_seconds: 60,
    agent: { harness: "shell", settings: { command: agent } },
    evaluator: judged,
  },
  {
    task_id: NO_JUDGE,
    instruction,
    timeout_seconds: 60,
    agent: { harness: "shell", settings: { command: agent } },
    evaluator: judged,
    // The judge's runtime is `<session>.eval.*`: its prepare step fails there, and only there.
    runtime: { prepare: ['case "$PWD" in *.eval.*) echo "the judge cannot start here" >&2; exit 3;; esac'] },
  },
];

let dir: string;
let sessions: string;
let output = "";
let code: number | null = null;
const results = new Map<string, SessionResult[]>();

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-long-paths-"));
  sessions = join(dir, "d".repeat(200 - dir.length - 10), "sessions");
  await mkdir(sessions, { recursive: true });
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, TASKS.map((t) => JSON.stringify(t)).join("\n"));
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin", "polar.js"), "run", tasksFile, "--out", join(dir, "out"), "--run", "2"],
    {
      cwd: ROOT,
      env: { ...process.env, POLAR_SESSIONS_DIR: sessions },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout.on("data", (c) => (output += c));
  child.stderr.on("data", (c) => (output += c));
  code = await new Promise<number | null>((done, fail) => {
    child.on("error", fail);
    child.on("close", done);
  });
  const store = new DirectoryStore(join(dir, "out", "store"));
  for (const task of TASKS) results.set(task.task_id, await readTaskResults(store, task.task_id));
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(problem !== null)("sessions under a deep sessions dir, with a long task id", () => {
  it("would pass a Unix socket address's limit with the socket at its own path", () => {
    expect(sessions.length).toBe(200);
    expect(Buffer.byteLength(join(sessions, `${LONG_ID}-0.1.1`, "run", "proxy.sock"))).toBeGreaterThan(
      MAX_SOCKET_PATH_BYTES,
    );
  });

  it("the agent reaches the proxy and its judge runs: COMPLETED with reward 1", () => {
    const [r] = results.get(LONG_ID) ?? [];
    expect(r, output.slice(-3000)).toBeDefined();
    expect(r?.status, r?.error ?? "").toBe("COMPLETED");
    expect(r?.reward).toBe(1);
    expect(r?.evaluation?.metadata).toMatchObject({ runtime: "fresh", missing_lines: [] });
    expect(r?.trajectory.traces.length).toBeGreaterThan(0);
  });

  it("a judge that cannot start ends the session ERROR with the reason, in the result and the summary", () => {
    const [r] = results.get(NO_JUDGE) ?? [];
    expect(r, output.slice(-3000)).toBeDefined();
    expect(r?.status).toBe("ERROR");
    expect(r?.error).toMatch(
      /^evaluator test_on_output failed: evaluation runtime: runtime\.prepare\[0\] exited 3: the judge cannot start here/,
    );
    expect(r?.evaluation).toMatchObject({ evaluator: "test_on_output", error: r?.error });
    expect(output).toContain(`${NO_JUDGE}-0: evaluator test_on_output failed:`);
    // polar run says so in its exit status too.
    expect(code).toBe(1);
  });
});
