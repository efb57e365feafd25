import { describe, expect, it } from "vitest";
// @ts-expect-error: a browser module of the viewer (plain JS, no types)
import { markersOf } from "../../viewer/web/trace-rows.js";

/** The trace page's policy-version markers (docs/viewer.md): only where known and where they change. */
function versionMarkers(
  spans: Array<{ start: number; version_start: string | null; version_end: string | null }>,
) {
  const t = { prompt_len: 10, ids: new Array(40).fill(0), extras: { version_spans: spans }, break: null };
  const out: Array<[number, string]> = [];
  for (const [pos, marks] of markersOf(t) as Map<number, Array<{ kind: string; label: string }>>)
    for (const m of marks) if (m.kind === "version") out.push([pos, m.label]);
  return out;
}

const span = (start: number, a: string | null, b: string | null = a) => ({
  start,
  end: start + 5,
  version_start: a,
  version_end: b,
});

describe("trace page version markers", () => {
  it("shows none for a multi-turn trace without versions (one null span per turn)", () => {
    expect(versionMarkers([span(0, null), span(10, null), span(20, null)])).toEqual([]);
  });

  it("shows none when every turn has the same version", () => {
    expect(versionMarkers([span(0, "3"), span(10, "3")])).toEqual([]);
    expect(versionMarkers([span(0, "3")])).toEqual([]);
  });

  it("shows the first version and each change, skipping unknown turns", () => {
    expect(versionMarkers([span(0, "3"), span(10, null), span(20, "3"), span(30, "4")])).toEqual([
      [10, "policy version 3"],
      [40, "policy version 4"],
    ]);
  });

  it("shows a turn that crossed a weight update, and the version after it", () => {
    expect(versionMarkers([span(0, "v7", "v8"), span(10, "v8")])).toEqual([
      [10, "policy version v7 → v8"],
      [20, "policy version v8"],
    ]);
  });
});
