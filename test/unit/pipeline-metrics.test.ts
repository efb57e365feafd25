import { describe, expect, it } from "vitest";
import { RunnerMetrics } from "../../batch-runner/metrics.ts";

describe("RunnerMetrics", () => {
  it("serves stage depths, in-flight, settled counts and stage durations on /metrics", async () => {
    const stats = { init: 2, ready: 1, run: 3, postrun: 0, inFlight: 6 };
    const metrics = new RunnerMetrics(() => stats);
    metrics.countSettled("completed");
    metrics.countSettled("completed");
    metrics.countSettled("failed");
    metrics.observeStage("run", 1500);
    const server = await metrics.serve(0);
    try {
      const text = await (await fetch(server.url)).text();
      expect(text).toContain('polar_runner_stage_depth{stage="init"} 2');
      expect(text).toContain('polar_runner_stage_depth{stage="run"} 3');
      expect(text).toContain("polar_runner_in_flight 6");
      expect(text).toContain('polar_runner_sessions_total{outcome="completed"} 2');
      expect(text).toContain('polar_runner_sessions_total{outcome="failed"} 1');
      expect(text).toContain('polar_runner_stage_duration_seconds_sum{stage="run"} 1.5');
      stats.run = 1;
      expect(await (await fetch(server.url)).text()).toContain('polar_runner_stage_depth{stage="run"} 1');
      expect((await fetch(server.url.replace("/metrics", "/other"))).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it("keeps each runner's metrics in its own registry", () => {
    const a = new RunnerMetrics(() => ({ init: 0, ready: 0, run: 0, postrun: 0, inFlight: 0 }));
    const b = new RunnerMetrics(() => ({ init: 0, ready: 0, run: 0, postrun: 0, inFlight: 0 }));
    expect(a.registry).not.toBe(b.registry);
  });
});
