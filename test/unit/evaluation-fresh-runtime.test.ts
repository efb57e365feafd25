import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshRuntimes } from "../../batch-runner/evaluation/fresh-runtime.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-fresh-"));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const source = (prepare: string[], prewarm: boolean) =>
  freshRuntimes({
    factory: processRuntimeFactory({ sessionsRoot: root }),
    spec: { sessionId: "s.eval", env: { GREETING: "hi" }, limits: {}, proxyUrl: "http://127.0.0.1:9" },
    prepare,
    timeoutMs: 10_000,
    prewarm,
  });

describe("fresh evaluation runtimes", () => {
  it("are built with the task's env and prepare steps; each get() is a new one; dispose stops all", async () => {
    const fresh = source(['echo "$GREETING" > prepared.txt'], true);
    const a = await fresh.get();
    const b = await fresh.get();
    expect(a.workDir).not.toBe(b.workDir);
    expect(await readFile(join(a.workDir, "prepared.txt"), "utf8")).toBe("hi\n");
    expect(await readFile(join(b.workDir, "prepared.txt"), "utf8")).toBe("hi\n");
    await fresh.dispose();
    expect(existsSync(a.workDir)).toBe(false);
    expect(existsSync(b.workDir)).toBe(false);
  });

  it("report a failing prepare step on get(), naming it, and leave nothing behind", async () => {
    const fresh = source(["true", "echo broken >&2; exit 3"], true);
    await expect(fresh.get()).rejects.toThrow(/runtime\.prepare\[1\] exited 3: broken/);
    await fresh.dispose();
  });

  it("a prewarmed runtime never used is stopped by dispose", async () => {
    const fresh = source([], true);
    await fresh.dispose();
    const dirs = await import("node:fs/promises").then((fs) => fs.readdir(root));
    expect(dirs).toEqual([]);
  });
});
