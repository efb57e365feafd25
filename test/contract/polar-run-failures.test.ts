import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionResult } from "../../shared/schemas/trajectory.ts";

/** `polar run` when things go wrong: each failure is loud, early, and says its cause (issue 15). */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const polar = join(repo, "bin/polar.js");

function polarCli(args: string[], timeout = 120_000) {
  // SIGKILL at the bound: a process stuck in a loop may not heed SIGTERM (that was the bug).
  return spawnSync(process.execPath, [polar, ...args], {
    cwd: repo,
    encoding: "utf8",
    timeout,
    killSignal: "SIGKILL",
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-run-failures-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function tasksFile(name: string, tasks: unknown[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
  return file;
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("polar run failures", () => {
  it("says a pretty-printed task file is not JSON Lines, once, instead of an error per line", async () => {
    const task = {
      task_id: "pretty",
      instruction: "x",
      agent: { harness: "shell", settings: { command: "true" } },
    };
    const file = join(dir, "pretty.jsonl");
    await writeFile(file, `${JSON.stringify(task, null, 2)}\n`);
    const res = polarCli(["run", file, "--out", join(dir, "pretty-out")]);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(
      `${file}: one JSON document over 10 lines; a task file holds one TaskRequest per line`,
    );
    expect(res.stderr).toContain("jq -c '.' FILE");
    expect(res.stderr).not.toMatch(/not valid JSON/);
    const list = join(dir, "pretty-list.jsonl");
    await writeFile(list, JSON.stringify([task, { ...task, task_id: "two" }], null, 1));
    expect(polarCli(["run", list, "--out", join(dir, "pretty-out")]).stderr).toContain(
      "a JSON array of 2 item(s) over",
    );
  });

  it("adds the one-task-per-line hint to a line that is not JSON", async () => {
    const file = join(dir, "half.jsonl");
    await writeFile(file, `{"task_id": "a",\n${JSON.stringify({ task_id: "b", instruction: "x" })}\n`);
    const res = polarCli(["run", file, "--out", join(dir, "half-out")]);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`${file}:1: not valid JSON`);
    expect(res.stderr).toContain("a task file holds one TaskRequest per line (JSON Lines)");
  });

  it("refuses a task file with misspelt fields before anything runs, naming each with a suggestion", async () => {
    const file = await tasksFile("typos.jsonl", [
      { task_id: "ok", instruction: "x", agent: { harness: "shell", settings: { command: "true" } } },
      {
        task_id: "typos",
        instruction: "x",
        num_sample: 3,
        evaluater: { strategy: "test_on_output" },
        agent: { harness: "shell", settings: { command: "true" } },
      },
      {
        task_id: "config-typo",
        instruction: "x",
        evaluator: { strategy: "test_on_output", config: { comand: "test -f out.txt" } },
        agent: { harness: "shell", settings: { comand: "true" } },
      },
    ]);
    const out = join(dir, "typos-out");
    const res = polarCli(["run", file, "--out", out]);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`${file}:2: num_sample: unknown field (did you mean "num_samples"?)`);
    expect(res.stderr).toContain('evaluater: unknown field (did you mean "evaluator"?)');
    expect(res.stderr).toContain('evaluator.config.comand: unknown field (did you mean "command"?)');
    expect(res.stderr).toContain('agent.settings.comand: unknown field (did you mean "command"?)');
    expect(res.stderr).toMatch(/2 invalid line\(s\); nothing run/);
    // Nothing ran: not even the valid first line.
    expect(existsSync(out)).toBe(false);
  });

  it("exits non-zero with the cause when --upstream does not answer, before starting anything", async () => {
    const file = await tasksFile("upstream.jsonl", [
      {
        task_id: "up",
        instruction: "x",
        num_samples: 5,
        agent: { harness: "shell", settings: { command: "true" } },
      },
    ]);
    const port = await closedPort();
    const out = join(dir, "upstream-out");
    // The bound the issue states (5 s); the preflight itself takes milliseconds.
    const res = polarCli(["run", file, "--out", out, "--upstream", `http://127.0.0.1:${port}`], 5000);
    expect(res.error).toBeUndefined();
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`the upstream http://127.0.0.1:${port} is not reachable`);
    expect(res.stderr).toContain("ECONNREFUSED");
    expect(existsSync(join(out, "store"))).toBe(false);
  });

  it("fails fast with a clear error when --out cannot be created (/proc)", async () => {
    const file = await tasksFile("proc.jsonl", [
      { task_id: "p", instruction: "x", agent: { harness: "shell", settings: { command: "true" } } },
    ]);
    // Before the fix this looped in mkdir forever; the generous bound only catches that hang.
    const res = polarCli(["run", file, "--out", "/proc/polar-out"], 15_000);
    expect(res.error).toBeUndefined();
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(
      /--out: cannot create \/proc\/polar-out\/store: mkdir \/proc\/polar-out: E[A-Z]+/,
    );
  });

  it("keeps a crashing agent's cause: the full first error line, its stdout/stderr, exit 1 and a summary", async () => {
    const command = `echo agent starting; node --input-type=module -e "import 'polar-no-such-package'"`;
    const file = await tasksFile("crash.jsonl", [
      { task_id: "crash", instruction: "x", agent: { harness: "shell", settings: { command } } },
      {
        task_id: "fine",
        instruction: "x",
        num_samples: 2,
        agent: { harness: "shell", settings: { command: "echo done" } },
      },
    ]);
    const out = join(dir, "crash-out");
    const res = polarCli(["run", file, "--out", out]);
    expect(res.status).toBe(1);
    const store = join(out, "store");
    const result = SessionResult.parse(
      JSON.parse(await readFile(join(store, "results/crash/crash-0.json"), "utf8")),
    );
    expect(result.status).toBe("ERROR");
    // The cause comes first and whole, however long the stack after it.
    expect(result.error).toMatch(
      /^the harness exited with code 1: Error \[ERR_MODULE_NOT_FOUND\]: Cannot find package 'polar-no-such-package' imported from \S+\n/,
    );
    const prefix = "artifacts/crash/crash-0/0/harness/";
    expect(result.artifacts).toEqual(expect.arrayContaining([`${prefix}stdout.txt`, `${prefix}stderr.txt`]));
    expect(await readFile(join(store, prefix, "stdout.txt"), "utf8")).toBe("agent starting\n");
    expect(await readFile(join(store, prefix, "stderr.txt"), "utf8")).toContain("Cannot find package");
    // The reason is printed, and the table has one row per task.
    expect(res.stdout).toMatch(/crash-0: the harness exited with code 1: Error \[ERR_MODULE_NOT_FOUND\]/);
    expect(res.stdout).toMatch(/^task\s+sessions\s+COMPLETED\s+TIMEOUT\s+ERROR\s+mean reward\s+shard$/m);
    expect(res.stdout).toMatch(
      /^crash\s+1\/1\s+0\s+0\s+1\s+0\.000\s+no Parquet shard: no session produced a trace/m,
    );
    expect(res.stdout).toMatch(/^fine\s+2\/2\s+2\s+0\s+0\s+1\.000\s+no Parquet shard/m);
  });

  it("stops cleanly on one Ctrl-C: running harnesses killed, exit 130", async () => {
    const file = await tasksFile("slow.jsonl", [
      {
        task_id: "slow",
        instruction: "x",
        num_samples: 2,
        agent: { harness: "shell", settings: { command: "sleep 600" } },
      },
    ]);
    const child = spawn(process.execPath, [polar, "run", file, "--out", join(dir, "slow-out")], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.stdout.resume();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`never started: ${stderr}`)), 60_000);
      const check = setInterval(() => {
        if (stderr.includes("proxy at")) {
          clearInterval(check);
          clearTimeout(timer);
          resolve();
        }
      }, 50);
    });
    // Let the harnesses start.
    await new Promise((r) => setTimeout(r, 1500));
    child.kill("SIGINT");
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve(null);
      }, 30_000);
      child.on("exit", (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    expect(code).toBe(130);
    expect(stderr).toContain("SIGINT: stopping the running sessions");
  });
});
