/**
 * The build-then-swap and command line the engine lane's model builders share
 * (scripts/engine/recipe_stamp.py `publish` / `main`, first used by make_tiny_vision.py): a model
 * is rebuilt exactly when its builder, an input or the seed changes, and a build that fails leaves
 * the model that was there. Plain python3, no torch: `fill` here writes a stand-in weights file.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ENGINE_DIR = new URL("../../scripts/engine/", import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), "polar-recipe-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const builder = join(work, "make_fake.py");
const input = join(work, "tokenizer.json");
const out = join(work, "models", "fake");

writeFileSync(
  builder,
  `import os, sys
sys.path.insert(0, ${JSON.stringify(ENGINE_DIR)})
from pathlib import Path
import recipe_stamp

INPUT = Path(${JSON.stringify(input)})

def fill(out, seed):
    if os.environ.get("FAIL_BUILD"):
        (out / "model.safetensors").write_text("half")
        raise SystemExit("build failed")
    (out / "model.safetensors").write_text(f"weights {seed} {INPUT.read_text()}")

recipe_stamp.main(Path(__file__), [INPUT], fill, "fake model")
`,
);

function build(args: string[] = [], env: Record<string, string> = {}): string {
  return execFileSync("python3", [builder, out, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  }).trim();
}

const weights = () => readFileSync(join(out, "model.safetensors"), "utf8");

describe("recipe_stamp.main / publish", () => {
  it("builds once, reuses while the recipe holds, rebuilds when an input or the seed changes", () => {
    writeFileSync(input, "vocab-1");
    expect(build()).toBe(`fake model built: ${out}`);
    expect(weights()).toBe("weights 0 vocab-1");
    expect(build()).toBe(`fake model up to date: ${out}`);
    writeFileSync(input, "vocab-2");
    expect(build()).toBe(`fake model built: ${out}`);
    expect(weights()).toBe("weights 0 vocab-2");
    expect(build(["--seed", "3"])).toBe(`fake model built: ${out}`);
    expect(weights()).toBe("weights 3 vocab-2");
    // No generation config left for the engine to take sampling defaults from.
    expect(() => readFileSync(join(out, "generation_config.json"))).toThrow();
  });

  it("a failed build leaves the previous model and its stamp in place", () => {
    writeFileSync(input, "vocab-3");
    expect(() => build([], { FAIL_BUILD: "1" })).toThrow(/build failed/);
    expect(weights()).toBe("weights 3 vocab-2");
    expect(build(["--seed", "3"])).toBe(`fake model built: ${out}`);
    expect(weights()).toBe("weights 3 vocab-3");
  });
});
