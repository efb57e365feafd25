// One reconstruction in a fresh process, for the growth benchmark's memory figure:
// `node bench/support/reconstruct-once.ts STORE_DIR` reconstructs session `bench` of task `bench`
// from a directory store and prints JSON: wall ms, the process's CPU ms, and its peak RSS growth
// over the RSS it had before reading (MiB).
import { readFileSync } from "node:fs";
import { reconstructSession } from "../../batch-runner/reconstruction/build-session.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";

const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024;
const store = new DirectoryStore(process.argv[2]);
const task = { task_id: "bench", builder: { strategy: "prefix_merging" as const, config: {} } };
const rssBefore = process.memoryUsage().rss / 2 ** 20;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const { trajectory } = await reconstructSession({ store, task, sessionId: "bench" });
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000,
    peakGrowthMb: hwm() - rssBefore,
    traces: trajectory.traces.length,
  }),
);
