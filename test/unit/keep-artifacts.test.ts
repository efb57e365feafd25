import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ArtifactBudget, keepArtifacts } from "../../batch-runner/pipeline/keep-artifacts.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function home(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "polar-artifacts-"));
  dirs.push(dir);
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

describe("keepArtifacts", () => {
  it("copies the preset's files and folders under artifacts/{task}/{session}/{attempt}/", async () => {
    const store = new MemoryStore();
    const homeDir = home({
      ".codex/sessions/2026/a.jsonl": "line a",
      ".codex/sessions/2026/b.jsonl": "line b",
      ".codex/config.toml": "not an artifact",
      "single.log": "one file",
    });
    const kept = await keepArtifacts({
      store,
      taskId: "t1",
      sessionId: "t1-0",
      attempt: 2,
      homeDir,
      paths: [".codex/sessions", "single.log", "missing-dir"],
      budget: new ArtifactBudget(),
    });
    expect(kept.keys).toEqual([
      "artifacts/t1/t1-0/2/.codex/sessions/2026/a.jsonl",
      "artifacts/t1/t1-0/2/.codex/sessions/2026/b.jsonl",
      "artifacts/t1/t1-0/2/single.log",
    ]);
    expect(kept.skipped).toEqual([]);
    expect(new TextDecoder().decode((await store.get(kept.keys[1]))!)).toBe("line b");
    expect(await store.list("artifacts/")).toEqual(kept.keys);
  });

  it("skips what would pass the byte budget and says so", async () => {
    const store = new MemoryStore();
    const homeDir = home({ "logs/a.log": "x".repeat(60), "logs/b.log": "y".repeat(60) });
    const kept = await keepArtifacts({
      store,
      taskId: "t",
      sessionId: "s",
      attempt: 0,
      homeDir,
      paths: ["logs"],
      budget: new ArtifactBudget(100),
    });
    expect(kept.keys).toEqual(["artifacts/t/s/0/logs/a.log"]);
    expect(kept.skipped).toEqual(["logs/b.log: over the session's 100-byte artifact budget (40 bytes left)"]);
  });

  it("takes every call of a session from one budget (issue 49: each step had its own)", async () => {
    const store = new MemoryStore();
    const homeDir = home({ "big/a": "x".repeat(30), "big/b": "y".repeat(30) });
    const budget = new ArtifactBudget(100);
    const keep = (step: string) =>
      keepArtifacts({
        store,
        taskId: "t",
        sessionId: "s",
        attempt: 0,
        homeDir,
        paths: ["big"],
        keyPrefix: `steps/${step}/`,
        budget,
      });
    expect((await keep("one")).keys).toHaveLength(2);
    const second = await keep("two");
    expect(second.keys).toEqual(["artifacts/t/s/0/steps/two/big/a"]);
    expect(second.skipped).toEqual(["big/b: over the session's 100-byte artifact budget (10 bytes left)"]);
    expect((await keep("three")).keys).toEqual([]);
    expect(budget.used).toBe(90);
  });
});
