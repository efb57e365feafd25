import { describe, expect, it } from "vitest";
// @ts-expect-error: a browser module of the viewer (plain JS, no types)
import { rewardByVersion } from "../../viewer/web/reward-by-version.js";

const session = (policy_version: string | null, reward: number | null) => ({ policy_version, reward });

describe("polar view: reward over policy versions", () => {
  it("averages each version's sessions across tasks, numeric versions in numeric order", () => {
    const tasks = [
      { sessions: [session("10", 1), session("2", 0.5), session(null, 0.9)] },
      { sessions: [session("2", 0.7), session("10", 0.8), session("2", null)] },
    ];
    const points = rewardByVersion(tasks);
    expect(points.map((p: { version: string }) => p.version)).toEqual(["2", "10"]);
    expect(points[0].mean).toBeCloseTo(0.6);
    expect(points[0].sessions).toBe(2);
    expect(points[1].mean).toBeCloseTo(0.9);
  });

  it("gives nothing for a store without versions (the view is then not shown)", () => {
    expect(rewardByVersion([{ sessions: [session(null, 1)] }])).toEqual([]);
  });
});
