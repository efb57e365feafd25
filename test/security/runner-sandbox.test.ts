import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { readTaskResults } from "../support/runner-stack.ts";

/*
 * Findings 1, 5 and 10, as the agent would try them in the DEFAULT runtime (`polar run`, a task that
 * names no backend): read the store's task file (where the evaluator's hidden inputs are), a
 * concurrent session's work dir, the runner's environment (/proc/$PPID/environ, every /proc/N/environ
 * it can see, its own env), /etc/shadow, and leave a `setsid sleep` behind. On the old default
 * (`process`) every one of these worked.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const problem = bwrapProblem();
if (problem) console.warn(`runner-sandbox: ${problem}; polar run falls back to process, so this is skipped`);

const tag = randomBytes(6).toString("hex");
const secrets = {
  AWS_SECRET_ACCESS_KEY: `aws-secret-${tag}`,
  POLAR_SIGNING_KEY: `signing-key-${tag}`,
  POLAR_CONTROL_TOKEN: `control-token-${tag}`,
};
const HIDDEN = `HIDDEN-TEST-${tag}`;
const SLEEP_SECONDS = 3000 + (Number.parseInt(tag.slice(0, 3), 16) % 900);

let dir: string;
let output = "";
const results: SessionResult[] = [];

/** Pids whose command line is exactly `sleep <seconds>`. */
async function sleepers(seconds: number): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (cmd === `sleep\0${seconds}\0`) out.push(Number(name));
  }
  return out;
}

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-attack-"));
  const sessions = join(dir, "sessions");
  const store = join(dir, "out", "store");
  const attack = [
    `echo "session $$" > mine.txt`,
    // Both samples run at once: each looks for the other's work dir while it is still there.
    "sleep 2",
    `cat ${store}/tasks/attack.json 2>/dev/null | grep -o 'HIDDEN-TEST-[0-9a-f]*' | sed 's/^/LEAKED /'`,
    `test -r ${store}/tasks/attack.json && echo TASKFILE-READ || echo TASKFILE-REFUSED`,
    `echo "WORKDIRS-SEEN $(cat ${sessions}/*/work/mine.txt 2>/dev/null | wc -l)"`,
    "cat /etc/shadow >/dev/null 2>&1 && echo SHADOW-READ || echo SHADOW-REFUSED",
    `{ tr '\\0' '\\n' < /proc/$PPID/environ; env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; done; } 2>/dev/null | grep -E '^(AWS_|POLAR_SIGNING_KEY|POLAR_CONTROL_TOKEN)' | sed 's/^/LEAKED /' | sort -u`,
    // Waits until the child has really left the process group (setsid done) before going on.
    `setsid sh -c 'echo x > escaped; exec sleep ${SLEEP_SECONDS}' </dev/null >/dev/null 2>&1 & while [ ! -s escaped ]; do sleep 0.05; done`,
    "echo END",
  ].join("\n");
  const task = {
    task_id: "attack",
    instruction: "(the agent's commands are in the shell command)",
    num_samples: 2,
    timeout_seconds: 60,
    agent: { harness: "shell", settings: { command: attack } },
    // What an evaluator's hidden inputs look like in tasks/{id}.json.
    metadata: { hidden_tests: HIDDEN },
  };
  const tasksFile = join(dir, "tasks.jsonl");
  await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin", "polar.js"), "run", tasksFile, "--out", join(dir, "out")],
      {
        cwd: ROOT,
        env: { ...process.env, ...secrets, POLAR_SESSIONS_DIR: sessions },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    child.on("error", fail);
    child.on("close", done);
  });
  if (code !== 0) throw new Error(`polar run exited ${code}:\n${output}`);
  results.push(...(await readTaskResults(new DirectoryStore(store), "attack")));
}, 120_000);

afterAll(async () => {
  for (const pid of await sleepers(SLEEP_SECONDS)) process.kill(pid, "SIGKILL");
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(problem !== null)("an agent in the default runtime", () => {
  it("ran both sessions to the end, in the sandbox", () => {
    expect(results).toHaveLength(2);
    for (const r of results) {
      expect(r.status, r.error ?? "").toBe("COMPLETED");
      expect(r.agent?.final_answer).toMatch(/END$/);
    }
  });

  it("cannot read the store's task file (the evaluator's hidden inputs)", () => {
    for (const r of results) {
      expect(r.agent?.final_answer).toContain("TASKFILE-REFUSED");
      expect(r.agent?.final_answer).not.toContain(HIDDEN);
    }
  });

  it("cannot see a concurrent session's work dir", () => {
    for (const r of results) expect(r.agent?.final_answer).toContain("WORKDIRS-SEEN 1");
  });

  it("cannot read /etc/shadow", () => {
    for (const r of results) expect(r.agent?.final_answer).toContain("SHADOW-REFUSED");
  });

  it("finds none of the runner's secrets in its own env, its parent's or any process it can see", () => {
    for (const r of results) {
      expect(r.agent?.final_answer).not.toContain("LEAKED");
      for (const value of Object.values(secrets)) expect(JSON.stringify(r)).not.toContain(value);
    }
  });

  it("leaves no process behind (setsid included)", async () => {
    // The kernel reaps a dead pid namespace asynchronously: give it a moment, not forever.
    let left = await sleepers(SLEEP_SECONDS);
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = await sleepers(SLEEP_SECONDS);
    }
    expect(left).toEqual([]);
  });
});
