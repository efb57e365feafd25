import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `npm run lint` must pass in a checkout where `polar run` has written its outputs. */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const biome = join(repo, "node_modules/.bin/biome");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "biome-config-"));
  await copyFile(join(repo, "biome.json"), join(dir, "biome.json"));
  await writeFile(join(dir, "ok.ts"), "export const a = 1;\n");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function check() {
  return spawnSync(biome, ["check", "."], { cwd: dir, encoding: "utf8", timeout: 60_000 });
}

describe("biome.json", () => {
  it("lints what the repository holds", () => {
    expect(check().status).toBe(0);
  });

  it("ignores .polar/, where polar run, serve and sft write JSON results nobody formats", async () => {
    const store = join(dir, ".polar/run/store/results/t");
    await mkdir(store, { recursive: true });
    await writeFile(join(store, "t-0.json"), '{"status":"COMPLETED",   "reward":[1,2]}');
    const res = check();
    expect(res.stdout + res.stderr).not.toContain(".polar");
    expect(res.status).toBe(0);
  });
});
