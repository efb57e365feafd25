import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parquetReadObjects } from "hyparquet";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { UsageError } from "../../cli/command.ts";
import reconstruct from "../../cli/commands/reconstruct.ts";
import reward from "../../cli/commands/reward.ts";
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

/** Two hosted sessions' captures, reconstructed (reward null), as `polar reconstruct` leaves them. */
async function reconstructedStore(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "polar-reward-cli-"));
  dirs.push(dir);
  const store = new DirectoryStore(dir);
  const user = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198];
  for (const c of [
    capture(user, [9707, 0, IM_END], { task_id: TASK, session_id: "s-a" }),
    capture(user, [3838, IM_END], { task_id: TASK, session_id: "s-b" }),
  ])
    await store.put(keys.capture(TASK, c.session_id, c.capture_id), await encodeCapture(c));
  expect(await reconstruct.run(["--task", TASK, "--store", dir])).toBe(0);
  return dir;
}

const readResult = (dir: string, session: string) =>
  SessionResult.parse(JSON.parse(readFileSync(join(dir, keys.result(TASK, session)), "utf8")));

let err: string[];
beforeEach(() => {
  err = [];
  vi.spyOn(console, "log").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation((...a) => void err.push(a.join(" ")));
});
afterEach(() => vi.restoreAllMocks());

describe("polar reward", () => {
  it("scores a hosted session: result, traces and the group shard get the reward", async () => {
    const dir = await reconstructedStore();
    expect(readResult(dir, "s-a").reward).toBeNull();
    const args = ["--task", TASK, "--session", "s-a", "--store", dir];
    expect(await reward.run([...args, "--value", "0.5", "--note", "checked by hand"])).toBe(0);
    const scored = readResult(dir, "s-a");
    expect(scored.reward).toBe(0.5);
    expect(scored.trajectory.traces.every((t) => t.reward === 0.5)).toBe(true);
    expect(scored.evaluation).toMatchObject({
      evaluator: "manual",
      outcome_reward: 0.5,
      metadata: { note: "checked by hand" },
    });
    const bytes = readFileSync(join(dir, keys.shard(TASK)));
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    });
    expect(rows.find((r) => r.session_id === "s-a")?.reward).toBe(0.5);
    // Setting it again replaces it and remembers the previous value.
    expect(await reward.run([...args, "--value", "1"])).toBe(0);
    expect(readResult(dir, "s-a").evaluation).toMatchObject({
      outcome_reward: 1,
      metadata: { previous_reward: 0.5 },
    });
  });

  it("keeps a reward set by hand when the task is reconstructed again (a session added later)", async () => {
    const dir = await reconstructedStore();
    expect(await reward.run(["--task", TASK, "--session", "s-a", "--store", dir, "--value", "0.75"])).toBe(0);
    expect(await reconstruct.run(["--task", TASK, "--store", dir])).toBe(0);
    const rebuilt = readResult(dir, "s-a");
    expect(rebuilt.reward).toBe(0.75);
    expect(rebuilt.trajectory.traces.every((t) => t.reward === 0.75)).toBe(true);
    expect(rebuilt.evaluation).toMatchObject({ evaluator: "manual", outcome_reward: 0.75 });
    // The session nobody scored stays unscored.
    expect(readResult(dir, "s-b").reward).toBeNull();
    const bytes = readFileSync(join(dir, keys.shard(TASK)));
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    });
    expect(rows.find((r) => r.session_id === "s-a")?.reward).toBe(0.75);
  });

  it("refuses a session without a result, and bad values", async () => {
    const dir = await reconstructedStore();
    expect(await reward.run(["--task", TASK, "--session", "nobody", "--store", dir, "--value", "1"])).toBe(1);
    expect(err.join("\n")).toContain("polar reconstruct --task hosted-task --session nobody");
    await expect(
      reward.run(["--task", TASK, "--session", "s-a", "--store", dir, "--value", "high"]),
    ).rejects.toThrow(UsageError);
    await expect(reward.run(["--task", TASK, "--session", "s-a", "--store", dir])).rejects.toThrow(
      /--value is required/,
    );
  });
});
