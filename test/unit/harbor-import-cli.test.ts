import { spawnSync } from "node:child_process";
import { appendFile, cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `polar import-harbor` as a user runs it on a directory that is not a task, and on a collection with one bad task. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const GOOD = join(ROOT, "test", "fixtures", "harbor-services", "kv-store");
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-import-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const importHarbor = (...args: string[]) =>
  spawnSync(process.execPath, ["bin/polar.js", "import-harbor", ...args, "--harness", "pi"], {
    cwd: ROOT,
    encoding: "utf8",
  });

describe("polar import-harbor DIR", () => {
  it("on a directory without task.toml says task.toml is missing, not another file", async () => {
    const notTask = join(dir, "not-a-task");
    await mkdir(notTask);
    await writeFile(join(notTask, "readme.md"), "a collection's readme\n");
    await writeFile(join(notTask, "instruction.md"), "do it\n");
    const res = importHarbor(notTask);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`${notTask}: refused: task.toml: missing (not a Harbor task directory`);
    expect(res.stderr).not.toMatch(/readme\.md|refused: instruction\.md/);
    expect(res.stdout).toBe("");
  });

  it("on a collection with one bad task writes the others and exits 1 naming the bad one", async () => {
    const collection = join(dir, "collection");
    for (const name of ["good-a", "bad", "good-b"])
      await cp(GOOD, join(collection, name), { recursive: true });
    await appendFile(join(collection, "bad", "task.toml"), "\n[verifier.collect]\nx = 1\n");
    const res = importHarbor(collection);
    expect(res.status).toBe(1);
    const ids = res.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).task_id);
    expect(ids).toEqual(["good-a", "good-b"]);
    expect(res.stderr).toContain(`${join(collection, "bad")}: refused: task.toml`);
    expect(res.stderr).toContain("2 of 3 tasks converted");
  });
});
