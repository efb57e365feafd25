import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { bwrapMissing, desktopMissing } from "../support/sandbox-lanes.ts";
import { POLAR, readSessionResult, runProcess } from "./polar-run-process.ts";

/*
 * A desktop through MCP in real harnesses (bwrap): the example task
 * (examples/computer-use/desktop-tasks.jsonl) gives the agent our desktop MCP server
 * (examples/computer-use/desktop-mcp.mjs, started by the CLI from its own MCP config, inside the
 * sandbox), which starts Xvfb and the task's Tk app (it shows a code and has an entry box). The
 * dry-run policy is scripted to take a screenshot, click the box and type the code; in Claude Code
 * (Anthropic calls, the image in a tool_result) and Gemini CLI (Google calls, the image as
 * inlineData). The judge refuses both (ERROR, unpaid): each has a shell that could write the app's
 * file itself (test/security/computer-use-desktop-forged.test.ts), and so is an idle agent's (same
 * task and server, it only answers). Each screenshot reaches the proxy as a PNG, stored once under
 * blobs/sha256 though every later call re-sends it.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const EXAMPLE = join(ROOT, "examples", "computer-use", "desktop-tasks.jsonl");
const CODE = "K7Q-42X";
const SCREEN_TOOL = "Take a screenshot of the desktop";
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const skipReason = bwrapMissing() ?? desktopMissing();
if (skipReason) console.log(`desktop MCP e2e skipped: ${skipReason}`);

type Task = { task_id: string; instruction: string } & Record<string, unknown>;

/** The example task as written: the presets fill `{{polar_root}}` in its MCP server's argv. */
async function exampleTask(): Promise<Task> {
  const line = (await readFile(EXAMPLE, "utf8")).trim();
  return JSON.parse(line) as Task;
}

function withScript(task: Task, taskId: string, script: string[]): Task {
  const block = ["```polar-script", ...script, "```"].join("\n");
  return {
    ...task,
    task_id: taskId,
    instruction: task.instruction.replace(/```polar-script[\s\S]*```/, block),
  };
}

/** Gemini CLI offers the server's tools directly, as mcp_<server>_<tool>. */
function geminiTask(task: Task): Task {
  const gemini = withScript(task, "desktop-code-gemini", [
    "tool: mcp_desktop_screenshot {}",
    'tool: mcp_desktop_left_click {"x": 150, "y": 150}',
    `tool: mcp_desktop_type {"text": "${CODE}"}`,
    'tool: mcp_desktop_key {"keys": "Return"}',
    "say: Done, I typed the code.",
  ]);
  return { ...gemini, agent: { ...(task.agent as object), harness: "gemini_cli" } };
}

/** Solved sessions: task id -> the provider shape of its calls. */
const SOLVED = { "desktop-code": "anthropic", "desktop-code-gemini": "google" } as const;
const IDLE = "desktop-code-idle";
/** The judge's refusal of a harness with a shell (examples/computer-use/desktop-judge.mjs). */
const REFUSED =
  /desktop_code judges only sessions of a harness without a shell .*: harness (claude_code|gemini_cli) can write/;

describe.skipIf(skipReason !== null)("a desktop over MCP in Claude Code and Gemini CLI (bwrap)", () => {
  let dir: string;
  let output: string;
  let store: DirectoryStore;
  const results = new Map<string, SessionResult>();
  const captures = new Map<string, CaptureRecord[]>();

  beforeAll(async () => {
    for (const harness of ["claude_code", "gemini_cli"] as const)
      await installHarness(CLI_PRESETS[harness], { log: (line) => console.log(`[${harness}] ${line}`) });
    dir = await mkdtemp(join(tmpdir(), "desktop-mcp-e2e-"));
    const solved = await exampleTask();
    const tasks = [solved, geminiTask(solved), withScript(solved, IDLE, ["say: Done."])];
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
    const run = await runProcess(
      [process.execPath, POLAR, "run", tasksFile, "--out", join(dir, "out"), "--run", "3"],
      150_000,
    );
    output = run.output;
    const storeDir = join(dir, "out", "store");
    store = new DirectoryStore(storeDir);
    for (const { task_id: id } of tasks) {
      const result = await readSessionResult(storeDir, id, output);
      results.set(id, result);
      captures.set(id, (await loadCaptures(store, id, result.session_id)).captures);
    }
  }, 200_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const account = (id: string) =>
    `${JSON.stringify({ ...results.get(id), trajectory: undefined }).slice(0, 3000)}\n${output.slice(-3000)}`;

  it.each(Object.keys(SOLVED))(
    "%s reads the code off the screen and types it into the Tk app; the judge refuses its shell-bearing harness",
    (id) => {
      const result = results.get(id) as SessionResult;
      expect(result.status, account(id)).toBe("ERROR");
      expect(result.error, account(id)).toMatch(REFUSED);
      expect(result.reward).not.toBe(1);
      const requests = (captures.get(id) ?? []).map((c) => JSON.stringify(c.request));
      expect(
        requests.some((r) => r.includes(SCREEN_TOOL)),
        "the desktop's tools were listed",
      ).toBe(true);
      expect(
        requests.some((r) => r.includes(`typed ${CODE.length} characters`)),
        "the type tool answered",
      ).toBe(true);
    },
  );

  it.each(Object.entries(SOLVED))(
    "%s: the screenshot reached the proxy as a PNG (%s shape), stored once though re-sent",
    async (id, provider) => {
      const calls = captures.get(id) ?? [];
      for (const capture of calls) expect(capture.provider).toBe(provider);
      const refs = calls.flatMap((c) => (c.image_refs ?? []).filter((r) => r.field === "request"));
      // Taken once, then carried in the history of each call after it (click, type, key, answer).
      const hashes = new Set(refs.map((r) => r.sha256));
      expect(hashes.size, JSON.stringify(refs)).toBe(1);
      expect(refs.length).toBeGreaterThanOrEqual(4);
      expect(new Set(refs.map((r) => r.media_type))).toEqual(new Set(["image/png"]));
      const [hash] = [...hashes];
      const blob = (await store.get(keys.imageBlob(hash as string))) as Uint8Array;
      expect([...blob.subarray(0, 8)]).toEqual(PNG);
      const ihdr = Buffer.from(blob.subarray(16, 24));
      expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4)]).toEqual([1024, 768]);
      // No capture holds the bytes: each holds a placeholder.
      const b64 = Buffer.from(blob).toString("base64").slice(0, 200);
      for (const capture of calls) expect(JSON.stringify(capture)).not.toContain(b64);
    },
  );

  it("the store holds one object per distinct screenshot, nothing for the idle session", async () => {
    const hashes = new Set(
      [...captures.values()].flat().flatMap((c) => (c.image_refs ?? []).map((r) => keys.imageBlob(r.sha256))),
    );
    expect((await store.list("blobs/sha256/")).sort()).toEqual([...hashes].sort());
    expect((captures.get(IDLE) ?? []).every((c) => !c.image_refs?.length)).toBe(true);
  });

  it("an agent that only answers is refused the same way: nothing paid", () => {
    const result = results.get(IDLE) as SessionResult;
    expect(captures.get(IDLE)?.length ?? 0).toBeGreaterThan(0);
    expect(result.error, account(IDLE)).toMatch(REFUSED);
    expect(result.reward).not.toBe(1);
  });
});
