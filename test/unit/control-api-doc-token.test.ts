import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * One credential, one name (issue 35): what a trainer copies from docs/control-api.md names the
 * token as `polar serve` prints it and `ControlClient(control_token=...)` takes it.
 */
const repo = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(repo, path), "utf8");

describe("docs/control-api.md's trainer commands", () => {
  const blocks = [...read("docs/control-api.md").matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  const trainerBlocks = blocks.filter((b) => /curl |examples\//.test(b));

  it("use the control token's name only", () => {
    expect(trainerBlocks.length).toBeGreaterThanOrEqual(3);
    for (const block of trainerBlocks) {
      expect(block).not.toMatch(/ADMIN|admin-token/);
      expect(block).toMatch(/\$POLAR_CONTROL_TOKEN|--control-token/);
    }
  });

  it("that name is the one polar serve and the Python client use", () => {
    expect(read("cli/commands/serve.ts")).toMatch(/control token .*POLAR_CONTROL_TOKEN/);
    expect(read("python/src/polar_rollouts/client.py")).toMatch(/control_token/);
  });
});
