import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { UsageError } from "../../cli/command.ts";
import inspect from "../../cli/commands/inspect.ts";
import reconstruct from "../../cli/commands/reconstruct.ts";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";

const TASK = "hosted-task";
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A directory store holding two hosted sessions: a two-turn chain, and a single call. */
async function hostedStore(): Promise<{ dir: string; store: DirectoryStore }> {
  const dir = mkdtempSync(join(tmpdir(), "polar-recon-cli-"));
  dirs.push(dir);
  const store = new DirectoryStore(dir);
  const user = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198];
  const a1 = capture(user, [9707, 0, IM_END], { task_id: TASK, session_id: "s-a" });
  const a2 = capture(
    [...user, 9707, 0, IM_END, 198, 151644, 872, 198, 3838, IM_END, 198, 151644, 77091, 198],
    [3838, IM_END],
    {
      task_id: TASK,
      session_id: "s-a",
    },
  );
  const b1 = capture(user, [3838, IM_END], { task_id: TASK, session_id: "s-b" });
  for (const c of [a1, a2, b1])
    await store.put(keys.capture(TASK, c.session_id, c.capture_id), await encodeCapture(c));
  return { dir, store };
}

let out: string[];
let err: string[];
beforeEach(() => {
  out = [];
  err = [];
  vi.spyOn(console, "log").mockImplementation((...a) => void out.push(a.join(" ")));
  vi.spyOn(console, "error").mockImplementation((...a) => void err.push(a.join(" ")));
});
afterEach(() => vi.restoreAllMocks());

const readResult = (dir: string, session: string) =>
  SessionResult.parse(JSON.parse(readFileSync(join(dir, keys.result(TASK, session)), "utf8")));

describe("polar reconstruct", () => {
  it("writes a result per hosted session and the group shard", async () => {
    const { dir } = await hostedStore();
    expect(await reconstruct.run(["--task", TASK, "--store", dir])).toBe(0);
    const a = readResult(dir, "s-a");
    expect(a).toMatchObject({ status: "COMPLETED", reward: null, sample_index: 0, error: null });
    expect(a.trajectory.traces).toHaveLength(1);
    expect(a.trajectory.traces[0].loss_mask.filter((m) => m === 1)).toHaveLength(5);
    expect(readResult(dir, "s-b").sample_index).toBe(1);
    expect(out.join("\n")).toContain(`shard: ${keys.shard(TASK)}`);
    expect(out.join("\n")).toContain("5 trainable tokens, 0 capture gaps, 0 orphans");
    expect(
      readFileSync(join(dir, keys.shardJsonl(TASK)), "utf8")
        .trim()
        .split("\n"),
    ).toHaveLength(2);
  });

  it("with --session, reconstructs one session and waits for the rest of the group", async () => {
    const { dir } = await hostedStore();
    expect(await reconstruct.run(["--task", TASK, "--session", "s-b", "--store", dir])).toBe(0);
    expect(readResult(dir, "s-b").sample_index).toBe(1);
    expect(out.join("\n")).toContain("shard: not written yet, fewer than 2 sessions");
  });

  it("takes the builder from the task file and reports an unusable builder config as ERROR", async () => {
    const { dir, store } = await hostedStore();
    const task = {
      task_id: TASK,
      instruction: "x",
      num_samples: 2,
      agent: { harness: "shell" },
      builder: { strategy: "prefix_merging", config: { end_of_turn_ids: "im_end" } },
      submitted_at: "2026-01-01T00:00:00.000Z",
    };
    await store.put(keys.task(TASK), JSON.stringify(task));
    expect(await reconstruct.run(["--task", TASK, "--store", dir])).toBe(1);
    expect(readResult(dir, "s-a")).toMatchObject({ status: "ERROR" });
    expect(readResult(dir, "s-a").error).toContain("builder.config.end_of_turn_ids");
  });

  it("says so when the task has no captures, and rejects bad flags", async () => {
    const { dir } = await hostedStore();
    expect(await reconstruct.run(["--task", "other", "--store", dir])).toBe(1);
    expect(err.join("\n")).toContain("no captures under captures/other/");
    expect(await reconstruct.run(["--task", TASK, "--session", "nobody", "--store", dir])).toBe(1);
    expect(err.join("\n")).toContain(`no captures under captures/${TASK}/nobody/`);
    await expect(reconstruct.run(["--store", dir])).rejects.toThrow(UsageError);
    await expect(reconstruct.run(["--task", "../x", "--store", dir])).rejects.toThrow(/not a valid id/);
    await expect(reconstruct.run(["--task", TASK, "--store", "ftp://x"])).rejects.toThrow(UsageError);
  });
});

describe("polar inspect", () => {
  it("summarizes a result, a Parquet shard and a JSONL shard alike, with trainable spans marked", async () => {
    const { dir } = await hostedStore();
    await reconstruct.run(["--task", TASK, "--store", dir]);
    for (const file of [keys.result(TASK, "s-a"), keys.shard(TASK), keys.shardJsonl(TASK)]) {
      out = [];
      expect(await inspect.run([join(dir, file), "--no-color"])).toBe(0);
      const text = out.join("\n");
      expect(text).toContain("[s-a #0 trace 0]");
      expect(text).toContain("5 trainable");
      expect(text).toContain(
        "⟦Hello!<|im_end|>⟧\n<|im_start|>user\nWhat<|im_end|>\n<|im_start|>assistant\n⟦What<|im_end|>⟧",
      );
    }
  });

  it("skips the text with --no-text and fails readably on a bad file", async () => {
    const { dir } = await hostedStore();
    await reconstruct.run(["--task", TASK, "--store", dir]);
    expect(await inspect.run([join(dir, keys.shard(TASK)), "--no-text"])).toBe(0);
    expect(out.join("\n")).toContain("2 traces from 2 sessions");
    expect(out.join("\n")).not.toContain("⟦");
    expect(await inspect.run([join(dir, keys.capture(TASK, "s-a", "x")).replace(".json.gz", ".json")])).toBe(
      1,
    );
    expect(err.join("\n")).toContain("cannot read");
    await expect(inspect.run([])).rejects.toThrow(UsageError);
  });
});
