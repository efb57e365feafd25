import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** examples/trainer-submit.ts reads a task file as `polar run` does, before it talks to any proxy. */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const example = join(repo, "examples/trainer-submit.ts");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-submit-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function submit(tasks: string, taskId: string) {
  // Nothing listens on port 9: a task the example found would fail on the connection instead.
  return spawnSync(
    process.execPath,
    [example, "--proxy", "http://127.0.0.1:9", "--control-token", "t", "--tasks", tasks, "--task-id", taskId],
    { cwd: repo, encoding: "utf8", timeout: 30_000 },
  );
}

describe("examples/trainer-submit.ts", () => {
  it("skips `//` lines, as docs/tasks.md allows and `polar run` does", async () => {
    const lines = (await readFile(join(repo, "examples/tasks.jsonl"), "utf8")).trim().split("\n");
    const file = join(dir, "commented.jsonl");
    await writeFile(
      file,
      ["// the examples, with notes", ...lines.flatMap((l) => [l, "  // note"])].join("\n"),
    );
    const res = submit(file, "absent");
    expect(res.stderr).toContain(`no task absent in ${file}`);
    expect(res.stderr).not.toMatch(/SyntaxError/);
    expect(res.status).toBe(1);
    // A task it does find goes on to the proxy (and fails there, nothing listens).
    const found = submit(file, "count-lines");
    expect(found.stderr).not.toMatch(/SyntaxError|no task/);
    expect(found.stderr).toMatch(/fetch failed|ECONNREFUSED/);
  });

  it("reports a bad line as `polar run` does, file and line number", async () => {
    const file = join(dir, "typo.jsonl");
    await writeFile(
      file,
      `// one task\n${JSON.stringify({ task_id: "t", instruction: "x", num_sample: 2 })}\n`,
    );
    const res = submit(file, "t");
    expect(res.stderr).toMatch(`${file}:2: `);
    expect(res.stderr).toContain(`num_sample: unknown field (did you mean "num_samples"?)`);
    expect(res.status).toBe(1);
  });
});
