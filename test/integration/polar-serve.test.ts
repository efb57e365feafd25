import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../shared/node/open-store.ts";
import { readCaptures } from "../support/proxy.ts";

/** `polar serve`: the control API with one command, driven by the example trainer over HTTP. */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const polar = join(repo, "bin/polar.js");

let dir: string;
let serve: ChildProcess;
let stdout = "";
let stderr = "";
let url: string;
let token: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-serve-"));
  // --logprobs-mode: what the engine's logprobs mean, as scripts/engine.sh starts vLLM; every
  // capture must record it (it recorded vLLM's default, raw_logprobs, whatever the engine did).
  const args = [
    "serve",
    "--port",
    "0",
    "--out",
    dir,
    "--log-requests",
    "--logprobs-mode",
    "processed_logprobs",
  ];
  serve = spawn(process.execPath, [polar, ...args], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, POLAR_CONTROL_TOKEN: "" },
  });
  serve.stdout?.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  serve.stderr?.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`polar serve did not start:\n${stdout}\n${stderr}`)),
      60_000,
    );
    const poll = setInterval(() => {
      const m = /--proxy (http:\/\/127\.0\.0\.1:\d+) --control-token ([0-9a-f]+)/.exec(stdout);
      if (m) {
        [, url, token] = m;
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
    }, 50);
    serve.once("exit", (code) => reject(new Error(`polar serve exited ${code}:\n${stdout}\n${stderr}`)));
  });
}, 90_000);

afterAll(async () => {
  if (serve.exitCode === null) {
    serve.kill("SIGTERM");
    await new Promise((r) => serve.once("exit", r));
  }
  await rm(dir, { recursive: true, force: true });
});

function run(
  cmd: string,
  args: string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      err += c;
    });
    child.on("close", (status) => resolve({ status, stdout: out, stderr: err }));
  });
}

describe("polar serve", () => {
  it("runs examples/trainer-submit.ts end to end: submit, wait, download the shard", async () => {
    // Not spawnSync: this process must keep reading the server's output while the trainer runs.
    const res = await run(process.execPath, [
      join(repo, "examples/trainer-submit.ts"),
      "--proxy",
      url,
      "--control-token",
      token,
      "--timeout-s",
      "120",
    ]);
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/submitted hello-file: 2 sessions enqueued/);
    expect(res.stdout).toMatch(/completed: 2 COMPLETED, 0 TIMEOUT, 0 ERROR/);
    expect(res.stdout).toMatch(/shard: \d+ bytes, 2 rows/);
    expect(res.stdout).toMatch(
      /row session=hello-file-0 trace=0 status=COMPLETED reward=1 .*trainable=[1-9]/,
    );
    // --log-requests: the control calls and the harness's model calls, one line each.
    expect(stderr).toMatch(/POST \/v1\/tasks provider=- session=- status=201 \d+ms/);
    expect(stderr).toMatch(
      /POST \/v1\/chat\/completions provider=openai_chat session=hello-file-\d status=200 \d+ms/,
    );
    const captures = await readCaptures(openStore(join(dir, "store")), "hello-file", "hello-file-0");
    expect(captures.length).toBeGreaterThan(0);
    expect(captures.map((c) => c.sampling?.logprobs_mode)).toEqual(captures.map(() => "processed_logprobs"));
  });

  it("rejects a task with a misspelt field, naming it (not `invalid json`), before anything is queued", async () => {
    const res = await fetch(`${url}/v1/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        task_id: "typo",
        instruction: "x",
        num_sample: 3,
        agent: { harness: "shell", settings: { comand: "true" } },
      }),
    });
    expect(res.status).toBe(400);
    const message = (await res.json()).error.message;
    expect(message).toContain('num_sample: unknown field (did you mean "num_samples"?)');
    expect(message).not.toMatch(/invalid json/i);
    // Every mistake in one answer: the harness settings too.
    expect(message).toContain('agent.settings.comand: unknown field (did you mean "command"?)');
    const settings = await fetch(`${url}/v1/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        task_id: "typo",
        instruction: "x",
        agent: { harness: "shell", settings: { comand: "true" } },
      }),
    });
    expect(settings.status).toBe(400);
    expect((await settings.json()).error.message).toContain(
      'agent.settings.comand: unknown field (did you mean "command"?)',
    );
    const status = await fetch(`${url}/v1/tasks/typo`, { headers: { authorization: `Bearer ${token}` } });
    expect(status.status).toBe(404);
  });

  it("serves the viewer read-only under /viewer behind the control credential", async () => {
    // Runs after the trainer test, so the store holds hello-file's results.
    expect((await fetch(`${url}/viewer/api/tasks`)).status).toBe(401);
    expect(
      (await fetch(`${url}/viewer/api/tasks`, { headers: { authorization: "Bearer wrong" } })).status,
    ).toBe(401);
    const tasks = await fetch(`${url}/viewer/api/tasks`, { headers: { authorization: `Bearer ${token}` } });
    expect(tasks.status).toBe(200);
    expect(JSON.stringify(await tasks.json())).toContain("hello-file");
    const write = await fetch(`${url}/viewer/api/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(write.status).toBe(405);
  });

  it("stops on SIGTERM with exit 0", async () => {
    serve.kill("SIGTERM");
    const code = await new Promise((r) => serve.once("exit", r));
    expect(code).toBe(0);
  });
});
