import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { UsageError } from "../../cli/command.ts";
import { engineFlag, imageLimitFlags, parseFlags, upstreamFlag } from "../../cli/flags.ts";
import { readTasksFile } from "../../cli/tasks-file.ts";

/** The flag helpers run, sft, submit, policy, proxy, runner, token, inspect and reconstruct share. */
describe("cli flags", () => {
  it("turns parseArgs complaints into usage errors and returns typed values", () => {
    const opts = { port: { type: "string" }, quiet: { type: "boolean" } } as const;
    const parsed = parseFlags({
      args: ["--port", "9", "--quiet", "f"],
      options: opts,
      allowPositionals: true,
    });
    expect(parsed.values).toEqual({ port: "9", quiet: true });
    expect(parsed.positionals).toEqual(["f"]);
    expect(() => parseFlags({ args: ["--nope"], options: opts, strict: true })).toThrow(UsageError);
    expect(() => parseFlags({ args: ["--nope"], options: opts, strict: true })).toThrow(
      /Unknown option '--nope'/,
    );
  });

  it("accepts only http(s) upstreams and the two engines, naming the bad value", () => {
    expect(upstreamFlag(undefined)).toBeUndefined();
    expect(upstreamFlag("http://127.0.0.1:8000")).toBe("http://127.0.0.1:8000");
    expect(() => upstreamFlag("ftp://x")).toThrow('--upstream must be an http(s) URL, got "ftp://x"');
    expect(() => upstreamFlag("http:///x")).toThrow(UsageError);
    expect(engineFlag(undefined)).toBe("vllm");
    expect(engineFlag("sglang")).toBe("sglang");
    expect(() => engineFlag("tgi")).toThrow("--engine must be vllm or sglang, got tgi");
  });
});

describe("image limit flags (issue 49)", () => {
  it("absent flags leave the proxy's defaults; given ones are checked", () => {
    expect(imageLimitFlags({})).toEqual({});
    expect(
      imageLimitFlags({
        "max-image-pixels": "1000",
        "max-images-per-call": "4",
        "max-session-images": "9",
        "max-session-image-mb": "0.5",
      }),
    ).toEqual({
      maxImagePixels: 1000,
      maxImagesPerCall: 4,
      maxSessionImages: 9,
      maxSessionImageBytes: 524288,
    });
    expect(() => imageLimitFlags({ "max-images-per-call": "0" })).toThrow(UsageError);
    expect(() => imageLimitFlags({ "max-image-pixels": "lots" })).toThrow(/--max-image-pixels/);
  });
});

describe("readTasksFile", () => {
  let dir: string;
  let good: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "polar-cli-flags-"));
    // A known-valid TaskRequest: the first example task (task_id hello-file).
    good = (await readFile(join(import.meta.dirname, "../../examples/tasks.jsonl"), "utf8")).split("\n")[0];
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function read(text: string | null, skipInvalid: boolean) {
    const file = join(dir, `tasks-${Math.random().toString(36).slice(2)}.jsonl`);
    if (text !== null) await writeFile(file, text);
    const errors: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((m: string) => void errors.push(m));
    try {
      return { file, errors, out: await readTasksFile("demo", file, skipInvalid, "nothing done (why)") };
    } finally {
      spy.mockRestore();
    }
  }

  it("refuses a file with a bad line unless told to skip it, naming the line", async () => {
    const text = `${good}\n{"task_id": 5}\n`;
    const refused = await read(text, false);
    expect(refused.out).toBeNull();
    expect(refused.errors[0]).toMatch(new RegExp(`^${refused.file}:2: task_id: `));
    expect(refused.errors.at(-1)).toBe("polar demo: 1 invalid line(s); nothing done (why)");
    const skipped = await read(text, true);
    expect(skipped.out?.tasks.map((t) => t.task_id)).toEqual(["hello-file"]);
    expect(skipped.out?.errors.map((e) => e.line)).toEqual([2]);
  });

  it("says which file it cannot read", async () => {
    const missing = await read(null, true);
    expect(missing.out).toBeNull();
    expect(missing.errors).toHaveLength(1);
    expect(missing.errors[0]).toMatch(new RegExp(`^polar demo: cannot read ${missing.file}: ENOENT`));
  });
});
