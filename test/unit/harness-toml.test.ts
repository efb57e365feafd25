import { describe, expect, it } from "vitest";
import { toToml } from "../../batch-runner/harness/toml.ts";

describe("toToml", () => {
  it("writes scalars first, then one section per nested table", () => {
    const toml = toToml({
      model: "policy",
      check: false,
      n: 3,
      model_providers: { polar: { base_url: "http://127.0.0.1:1/v1", retries: 1 } },
      otel: { exporter: "none" },
      list: ["a", "b"],
      skipped: null,
    });
    expect(toml).toBe(
      [
        'model = "policy"',
        "check = false",
        "n = 3",
        'list = ["a", "b"]',
        "",
        "[model_providers.polar]",
        'base_url = "http://127.0.0.1:1/v1"',
        "retries = 1",
        "",
        "[otel]",
        'exporter = "none"',
        "",
      ].join("\n"),
    );
  });

  it("keeps an empty table as an empty section", () => {
    expect(toToml({ a: {} })).toBe("[a]\n");
  });

  it("quotes keys that are not bare and escapes strings", () => {
    expect(toToml({ "a.b": 'say "hi"\n' })).toBe('"a.b" = "say \\"hi\\"\\n"\n');
  });

  it("names the path of a value TOML cannot hold", () => {
    expect(() => toToml({ a: { b: Number.NaN } })).toThrow(/a\.b/);
  });
});
