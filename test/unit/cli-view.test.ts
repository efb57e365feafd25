import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { UsageError } from "../../cli/command.ts";
import view from "../../cli/commands/view.ts";
import { resolveStoreSpec } from "../../inspect/store-dir.ts";

const dir = mkdtempSync(join(tmpdir(), "polar-view-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("polar view command", () => {
  it("finds the store inside a `polar run --out` directory and leaves other specs alone", () => {
    mkdirSync(join(dir, "run", "store", "results"), { recursive: true });
    expect(resolveStoreSpec(join(dir, "run"))).toBe(join(dir, "run", "store"));
    expect(resolveStoreSpec(join(dir, "run", "store"))).toBe(join(dir, "run", "store"));
    expect(resolveStoreSpec("s3://bucket/prefix")).toBe("s3://bucket/prefix");
  });

  it("refuses bad flags and a missing store without starting a server", async () => {
    await expect(view.run(["--port", "70000"])).rejects.toThrow(UsageError);
    await expect(view.run(["a", "b"])).rejects.toThrow(UsageError);
    await expect(view.run(["--host", "0.0.0.0"])).rejects.toThrow(UsageError);
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    expect(await view.run([join(dir, "nothing-here")])).toBe(1);
    expect(err.mock.calls.flat().join(" ")).toContain("no store at");
    err.mockRestore();
  });
});
