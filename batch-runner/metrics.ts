import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { capConnections, defaultConnectionCap } from "../shared/node/connection-cap.ts";
import { closeSilentConnections, FIRST_REQUEST_MS } from "../shared/node/first-request-deadline.ts";
import type { PipelineStats, StageName } from "./pipeline/staged-pipeline.ts";

/** The runner's Prometheus metrics, in their own Registry (nothing global, several runners per process work). */
export class RunnerMetrics {
  readonly registry = new Registry();
  private readonly sessions: Counter<"outcome">;
  private readonly durations: Histogram<"stage">;

  constructor(stats: () => PipelineStats) {
    const stage = new Gauge({
      name: "polar_runner_stage_depth",
      help: "Sessions currently in each pipeline stage (init, ready, run, postrun)",
      labelNames: ["stage"] as const,
      registers: [this.registry],
      collect() {
        const s = stats();
        for (const k of ["init", "ready", "run", "postrun"] as const) this.set({ stage: k }, s[k]);
      },
    });
    void stage;
    new Gauge({
      name: "polar_runner_in_flight",
      help: "Queue messages received and not yet acked or released",
      registers: [this.registry],
      collect() {
        this.set(stats().inFlight);
      },
    });
    this.sessions = new Counter({
      name: "polar_runner_sessions_total",
      help: "Messages settled, by outcome (completed, failed, released, skipped)",
      labelNames: ["outcome"] as const,
      registers: [this.registry],
    });
    this.durations = new Histogram({
      name: "polar_runner_stage_duration_seconds",
      help: "Time spent per stage (ready = waiting for a run slot)",
      labelNames: ["stage"] as const,
      buckets: [0.05, 0.25, 1, 5, 15, 60, 300, 900, 1800, 3600],
      registers: [this.registry],
    });
  }

  observeStage(stage: StageName, ms: number): void {
    this.durations.observe({ stage }, ms / 1000);
  }

  countSettled(outcome: "completed" | "failed" | "released" | "skipped"): void {
    this.sessions.inc({ outcome });
  }

  /**
   * Serves `GET /metrics` on host:port (0 = ephemeral). Like the proxy's, the listener holds a
   * bounded number of connections and closes one whose request has not come whole within
   * `firstRequestMs` of its accept (a scrape is one small GET): idle sockets need no credential
   * and would otherwise take the runner's descriptors for good.
   */
  async serve(
    port: number,
    host = "127.0.0.1",
    { firstRequestMs = FIRST_REQUEST_MS, maxConnections = defaultConnectionCap() } = {},
  ): Promise<{ url: string; close(): Promise<void> }> {
    const server: Server = createServer(
      // Node checks its deadlines every 30 s by default: once a second, as the proxy does.
      { headersTimeout: firstRequestMs, requestTimeout: firstRequestMs, connectionsCheckingInterval: 1_000 },
      (req, res) => {
        if (req.method === "GET" && req.url?.split("?")[0] === "/metrics") {
          this.registry.metrics().then(
            (text) => {
              res.writeHead(200, { "content-type": this.registry.contentType });
              res.end(text);
            },
            (err) => {
              res.writeHead(500, { "content-type": "text/plain" });
              res.end(String(err));
            },
          );
          return;
        }
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found: try GET /metrics\n");
      },
    );
    capConnections(server, maxConnections);
    closeSilentConnections(server, firstRequestMs);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const { port: bound } = server.address() as AddressInfo;
    return {
      url: `http://${host}:${bound}/metrics`,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }
}
