import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { COMPUTER_USE_PRESETS } from "../../batch-runner/harness/registry.ts";
import { BRIDGE_PORT } from "../../batch-runner/runtime/socket-bridge.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";
import { APP_PORT, CHROMIUM, exampleTasks, idleTask } from "./computer-use-tasks.ts";
import { POLAR, readSessionResult, runProcess } from "./polar-run-process.ts";
import { auditStrace, type ConnectCall, externalConnects, type StraceAudit } from "./strace-connects.ts";

/*
 * What browser-use and its Chromium try to reach, under strace, in one bwrap session (the idle
 * example task: the browser starts, loads the app, the model is asked once). Its sandbox has no
 * route out, so an attempt would fail silently; the trace shows whether one is made at all
 * (telemetry, version checks, Chromium's updaters and name lookups). A separate file from the
 * task e2e test because strace slows Chromium's many threads several-fold.
 */

const preset = COMPUTER_USE_PRESETS.browser_use;
const HAVE_STRACE =
  spawnSync("strace", ["-f", "-qq", "-e", "trace=connect", "-o", "/dev/null", "true"]).status === 0;
const PIDNS_FLAGS =
  spawnSync("strace", ["--decode-pids=pidns", "-o", "/dev/null", "true"]).status === 0
    ? ["--decode-pids=pidns"]
    : [];
const skipReason = !HAVE_STRACE
  ? "strace missing or not allowed to trace"
  : (bwrapMissing() ?? chromiumMissing(CHROMIUM));
if (skipReason) console.log(`browser_use network audit skipped: ${skipReason}`);

/**
 * Chromium's IPv6 reachability probe: a UDP connect() to a public resolver's address that sends
 * nothing (it only asks the kernel for a route, and the sandbox has none). Chromium has no switch
 * for it.
 */
function isRouteProbe(c: ConnectCall): boolean {
  return c.address === "2001:4860:4860::8888" && / = -1 ENETUNREACH/.test(c.line);
}

describe.skipIf(skipReason !== null)("browser_use under strace in bwrap", () => {
  let dir: string;
  let result: SessionResult;
  let audit: StraceAudit;
  let ports: Set<number>;

  beforeAll(async () => {
    const installed = await installHarness(preset, { log: (line) => console.log(`[browser_use] ${line}`) });
    dir = await mkdtemp(join(tmpdir(), "harness-audit-browser-use-"));
    const profile = (await exampleTasks()).get("cu-profile-name");
    if (!profile) throw new Error("examples/computer-use/tasks.jsonl lost cu-profile-name");
    // strace slows the browser down: a longer budget than the example's.
    const task = { ...idleTask(profile, "cu-audit"), timeout_seconds: 240 };
    const tasksFile = join(dir, "tasks.jsonl");
    await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
    const traceFile = join(dir, "strace.txt");
    const trace = ["-f", "-qq", ...PIDNS_FLAGS, "-e", "trace=connect,bind,execve,clone,clone3,fork,vfork"];
    const polar = [process.execPath, POLAR, "run", tasksFile, "--out", join(dir, "out")];
    const { output } = await runProcess(["strace", ...trace, "-o", traceFile, ...polar], 280_000);
    result = await readSessionResult(join(dir, "out", "store"), "cu-audit", output);
    const text = await readFile(traceFile, "utf8");
    audit = auditStrace(text, `${installed?.prefix}/`);
    // The ports the harness listens on inside its own sandbox.
    ports = new Set(audit.binds.filter((b) => audit.harnessPids.has(b.pid)).map((b) => b.port));
  }, 400_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("ran the session (the browser started and the model was asked)", () => {
    expect(result.status, result.error ?? "").toBe("COMPLETED");
    expect(result.agent?.final_answer).toBe("Done, the name is set.");
  });

  it("connects to nothing but the proxy's bridge and ports its own sandbox opened", () => {
    expect(audit.harnessPids.size).toBeGreaterThan(0);
    const harness = audit.connects.filter(
      (c) => audit.harnessPids.has(c.pid) && (c.family === "AF_INET" || c.family === "AF_INET6"),
    );
    const stray = harness.filter(
      (c) =>
        !isRouteProbe(c) &&
        !(/^127\./.test(c.address) && (c.port === BRIDGE_PORT || ports.has(c.port ?? -1))),
    );
    // No name lookup (port 53), no update check, no telemetry: only loopback inside the sandbox.
    expect(stray.map((c) => c.line)).toEqual([]);
    expect(harness.some((c) => c.port === BRIDGE_PORT)).toBe(true);
    expect(harness.some((c) => c.port === APP_PORT)).toBe(true);
    expect(ports.has(APP_PORT)).toBe(true);
    expect(externalConnects(audit.connects.filter((c) => !isRouteProbe(c)))).toEqual([]);
  });
});
