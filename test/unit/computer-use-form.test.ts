import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: the example app is plain JavaScript without types.
import { applyEvent, initialState, parseSeed, replay } from "../../examples/computer-use/app/form-state.mjs";

/*
 * The example computer-use app's state (examples/computer-use/app/form-state.mjs), which both the
 * app and the judge's replay run: the reward can only move through values the app accepts.
 */

const SEED = JSON.stringify({
  title: "Notification settings",
  fields: [
    { name: "email_alerts", label: "Email alerts", type: "checkbox", value: true },
    {
      name: "frequency",
      label: "Digest",
      type: "select",
      options: ["daily", "weekly", "never"],
      value: "daily",
    },
    { name: "note", label: "Note", type: "text" },
  ],
});

describe("form app state", () => {
  const seed = parseSeed(SEED);

  it("starts from the seed's values (a text field without one is empty)", () => {
    expect(initialState(seed)).toEqual({
      values: { email_alerts: true, frequency: "daily", note: "" },
      saves: 0,
    });
  });

  it("applies a valid save and refuses values the form cannot hold", () => {
    const start = initialState(seed);
    const ok = applyEvent(seed, start, { type: "save", values: { email_alerts: false, frequency: "never" } });
    expect(ok).toEqual({
      state: { values: { email_alerts: false, frequency: "never", note: "" }, saves: 1 },
      error: null,
    });
    for (const values of [
      { frequency: "hourly" },
      { email_alerts: "false" },
      { admin: true },
      { note: "x".repeat(201) },
    ]) {
      expect(applyEvent(seed, start, { type: "save", values }).state, JSON.stringify(values)).toBe(start);
    }
    expect(applyEvent(seed, start, { type: "reset" }).error).toBe("unknown event");
  });

  it("replays a log to the same state the app reached, refused events skipped", () => {
    const events = [
      { type: "save", values: { frequency: "hourly" } },
      { type: "save", values: { email_alerts: false } },
      { type: "save", values: { frequency: "never" } },
    ];
    expect(replay(seed, events)).toEqual({
      values: { email_alerts: false, frequency: "never", note: "" },
      saves: 2,
    });
  });

  it("replay.mjs reads a log with lines that are not JSON and prints the final state", () => {
    const dir = mkdtempSync(join(tmpdir(), "cu-replay-"));
    writeFileSync(join(dir, "seed.json"), SEED);
    writeFileSync(
      join(dir, "events.jsonl"),
      '{"type":"save","values":{"note":"hi"}}\n{"type":"save","val\nnot json\n',
    );
    const script = new URL("../../examples/computer-use/app/replay.mjs", import.meta.url).pathname;
    const out = execFileSync(process.execPath, [script, join(dir, "seed.json"), join(dir, "events.jsonl")], {
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual({
      values: { email_alerts: true, frequency: "daily", note: "hi" },
      saves: 1,
    });
  });

  it("refuses a seed without fields or with an unknown field type", () => {
    expect(() => parseSeed('{"title": "x", "fields": []}')).toThrow(/fields/);
    expect(() => parseSeed('{"title": "x", "fields": [{"name": "a", "type": "file"}]}')).toThrow(
      /unknown type/,
    );
  });
});
