import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ArtifactBudget, keepArtifacts } from "../../batch-runner/pipeline/keep-artifacts.ts";
import { processRuntimeFactory } from "../../batch-runner/runtime/process.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";

/*
 * Finding 4: artifact collection followed symlinks. An agent linked `$HOME/.gemini/tmp` to a host
 * directory and POSTRUN copied the host's files into the store. Now nothing is followed.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

describe("artifacts an agent links out of its session", () => {
  it("skips and reports a linked artifact dir, a linked file and a linked parent; copies nothing of the host", async () => {
    const host = tempDir("polar-host-secrets-");
    writeFileSync(join(host, "id_rsa"), "HOST-PRIVATE-KEY");
    const home = tempDir("polar-agent-home-");
    mkdirSync(join(home, ".gemini"), { recursive: true });
    // The whole artifact dir is a link to the host.
    symlinkSync(host, join(home, ".gemini", "tmp"));
    // A real artifact dir holding one real file and one link to a host file.
    mkdirSync(join(home, ".codex", "sessions"), { recursive: true });
    writeFileSync(join(home, ".codex", "sessions", "real.jsonl"), "agent log");
    symlinkSync(join(host, "id_rsa"), join(home, ".codex", "sessions", "stolen.jsonl"));
    // A parent component of the artifact path is a link.
    symlinkSync(host, join(home, ".qwen"));

    const store = new MemoryStore();
    const kept = await keepArtifacts({
      store,
      taskId: "t",
      sessionId: "s",
      attempt: 0,
      homeDir: home,
      paths: [".gemini/tmp", ".codex/sessions", ".qwen/tmp"],
      budget: new ArtifactBudget(),
    });
    expect(kept.keys).toEqual(["artifacts/t/s/0/.codex/sessions/real.jsonl"]);
    expect(kept.skipped).toEqual([
      `.gemini/tmp: a symlink leaving the session (to ${host}), not followed`,
      `.codex/sessions/stolen.jsonl: a symlink leaving the session (to ${join(host, "id_rsa")}), not followed`,
      `.qwen: a symlink leaving the session (to ${host}), not followed`,
    ]);
    for (const key of await store.list("")) {
      expect(new TextDecoder().decode((await store.get(key)) as Uint8Array)).not.toContain(
        "HOST-PRIVATE-KEY",
      );
    }
  });

  it("caps a single file's size and the total, and says which were skipped", async () => {
    const home = tempDir("polar-agent-home-");
    mkdirSync(join(home, "logs"));
    writeFileSync(join(home, "logs", "a.log"), "a".repeat(40));
    writeFileSync(join(home, "logs", "big.log"), "b".repeat(200));
    writeFileSync(join(home, "logs", "c.log"), "c".repeat(40));
    const store = new MemoryStore();
    const kept = await keepArtifacts({
      store,
      taskId: "t",
      sessionId: "s",
      attempt: 1,
      homeDir: home,
      paths: ["logs"],
      budget: new ArtifactBudget(60),
      maxFileBytes: 100,
    });
    expect(kept.keys).toEqual(["artifacts/t/s/1/logs/a.log"]);
    expect(kept.skipped).toEqual([
      "logs/big.log: over the 100-byte per-file cap (200 bytes)",
      "logs/c.log: over the session's 60-byte artifact budget (20 bytes left)",
    ]);
  });
});

describe("hidden files copied into a session the agent has prepared", () => {
  it("are never written through the agent's link to a host dir", async () => {
    const host = tempDir("polar-host-dir-");
    const staging = tempDir("polar-hidden-");
    writeFileSync(join(staging, "test_hidden.mjs"), "hidden test");
    const rt = await processRuntimeFactory({ sessionsRoot: tempDir("polar-sessions-") }).create({
      sessionId: "upload-link",
      env: {},
      limits: {},
      proxyUrl: "http://127.0.0.1:9",
    });
    try {
      symlinkSync(host, join(rt.workDir, "tests"));
      await expect(rt.upload(join(staging, "test_hidden.mjs"), "tests/test_hidden.mjs")).rejects.toThrow(
        /upload to "tests\/test_hidden\.mjs" refused: a link in its path leaves the session/,
      );
      expect(readdirSync(host)).toEqual([]);
      // A link at the destination itself is replaced, not written through.
      symlinkSync(join(host, "victim"), join(rt.workDir, "expected.json"));
      await rt.upload(join(staging, "test_hidden.mjs"), "expected.json");
      expect(existsSync(join(host, "victim"))).toBe(false);
    } finally {
      await rt.stop();
    }
  });
});
