import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureDetail, firstErrorLine, OutputCapture } from "../../batch-runner/pipeline/harness-output.ts";
import { makeDir } from "../../cli/make-dir.ts";

const NODE_CRASH = `node:internal/modules/esm/resolve:873
  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);
        ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai' imported from /work/agent.mjs
${"    at frame (node:internal/modules/esm/resolve:1:1)\n".repeat(40)}
Node.js v24.21.0
`;

describe("harness output", () => {
  it("keeps the head and the tail of a long stream, saying how much was left out", () => {
    const out = new OutputCapture(10);
    for (const chunk of ["0123456", "789abcdef", "ghij", "KLMNOPQRST"]) out.push(chunk);
    expect(out.seen).toBe(30);
    expect(out.text()).toBe("0123456789\n[... 10 characters omitted ...]\nKLMNOPQRST");
    const short = new OutputCapture(10);
    short.push("abc");
    short.push("def");
    expect(short.text()).toBe("abcdef");
  });

  it("finds the line that states the error, whole, not the stack around it", () => {
    expect(firstErrorLine(NODE_CRASH)).toBe(
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai' imported from /work/agent.mjs",
    );
    expect(
      firstErrorLine(
        "Traceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'openai'\n",
      ),
    ).toBe("ModuleNotFoundError: No module named 'openai'");
    expect(firstErrorLine("error: unknown option '--foo'\n")).toBe("error: unknown option '--foo'");
    expect(firstErrorLine("all good\n")).toBeNull();
  });

  it("puts the cause first in a failure's detail, then the last lines", () => {
    const detail = failureDetail(NODE_CRASH, "");
    expect(detail.split("\n")[0]).toBe(
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'openai' imported from /work/agent.mjs",
    );
    expect(detail).toContain("Node.js v24.21.0");
    // Nothing stated as an error: just the tail; stdout when stderr is empty.
    expect(failureDetail("", "partial output")).toBe("partial output");
  });
});

describe("makeDir", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "polar-make-dir-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("creates missing levels and accepts an existing directory", async () => {
    const target = join(dir, "a", "b", "c");
    await makeDir(target);
    expect((await stat(target)).isDirectory()).toBe(true);
    await makeDir(target);
  });

  it("fails at once with the level and the cause where it cannot create", async () => {
    await writeFile(join(dir, "file"), "x");
    await expect(makeDir(join(dir, "file", "sub"))).rejects.toThrow(/ENOTDIR|is not a directory/);
    await expect(makeDir("/proc/polar-out/store")).rejects.toThrow(/mkdir \/proc\/polar-out: E[A-Z]+/);
  });
});
