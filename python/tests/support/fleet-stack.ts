/**
 * For the Python fleet tests (python/tests/test_trl_fleet.py): the distributed stack a trainer
 * trains through, as one process. s3rver and local-aws-sqs; two proxies on one S3 store, `polar
 * proxy --jobs-queue` (the CLI, as deployed) and the Worker in workerd (test/worker/worker-host.ts);
 * and two `polar runner` processes consuming the queue, runner 0 pointing its harnesses at the Node
 * proxy and runner 1 at the Worker (a runner's --proxy-url is how a session picks its proxy). Both
 * proxies start on the dry-run policy: only a trainer's `PUT /v1/replicas` through one of them
 * sends calls of both to its engine.
 *
 * Prints one JSON line `{proxy_urls, control_token, admin_token, bucket, prefix, env, queue_url,
 * runner_pids, proxy_pid, sessions_dirs, visibility_timeout_s, policy_url}`. Commands, one a line on stdin, each answered
 * with one JSON line: `start-runner N` (starts runner N again when it is not running:
 * `{runner, pid}`), `restart-proxy` (SIGTERM to the Node proxy, started again on the same port:
 * `{proxy_url, pid}`). Everything stops when stdin closes or on SIGTERM; the proxy and each runner
 * run in their own process groups (their pids), killed whole at the end, so no harness is left
 * behind; a caller that may die first guards those groups itself (the test's watchdog).
 *   node python/tests/support/fleet-stack.ts [--visibility-timeout S]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { unmountUnder } from "../../../batch-runner/runtime/disk-volume.ts";
import { startPolicy } from "../../../test/support/policy.ts";
import { startS3rver } from "../../../test/support/s3rver.ts";
import { startSqs } from "../../../test/support/sqs.ts";
import { startWorkers } from "../../../test/worker/worker-host.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const POLAR = join(ROOT, "bin/polar.js");
const CONTROL = "fleet-control-token";
const ADMIN = "fleet-admin-token";
const SIGNING_KEY = "fleet-signing-key-0123456789abcdefghij";
const PREFIX = "polar";
const flag = process.argv.indexOf("--visibility-timeout");
const VISIBILITY_S = flag > 0 ? Number(process.argv[flag + 1]) : 5;

const [policy, s3, sqs, root] = await Promise.all([
  startPolicy(),
  startS3rver({ bucket: "py-fleet" }),
  startSqs(),
  mkdtemp(join(tmpdir(), "polar-py-fleet-")),
]);
const queueUrl = await sqs.createQueue("fleet-jobs");
const childEnv = {
  ...(process.env as Record<string, string>),
  ...sqs.env,
  ...s3.env, // s3rver's credentials win; local-aws-sqs takes any
  POLAR_SIGNING_KEY: SIGNING_KEY,
  POLAR_CONTROL_TOKEN: "",
  POLAR_ADMIN_TOKEN: "",
};
const logs: Record<string, string> = {};
const keep = (name: string, child: ChildProcess) => {
  logs[name] = "";
  const add = (chunk: Buffer) => {
    logs[name] = (logs[name] + chunk).slice(-20_000);
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
};

const proxyPort = await freePort();
let proxy = await startProxy();
const worker = await startWorkers([
  {
    name: "edge",
    vars: {
      UPSTREAM_URL: policy.url,
      POLAR_SIGNING_KEY: SIGNING_KEY,
      POLAR_CONTROL_TOKEN: CONTROL,
      POLAR_ADMIN_TOKEN: ADMIN,
      JOBS_QUEUE_URL: queueUrl,
      STORE: "s3",
      S3_BUCKET: s3.bucket,
      S3_PREFIX: PREFIX,
      S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    },
  },
]);
const proxyUrls = [`http://127.0.0.1:${proxyPort}`, worker.url];
const runners: (ChildProcess | null)[] = [startRunner(0), startRunner(1)];

process.stdout.write(
  `${JSON.stringify({
    proxy_urls: proxyUrls,
    control_token: CONTROL,
    admin_token: ADMIN,
    bucket: s3.bucket,
    prefix: PREFIX,
    env: s3.env,
    queue_url: queueUrl,
    runner_pids: runners.map((r) => r?.pid),
    proxy_pid: proxy.pid,
    sessions_dirs: [0, 1].map(sessionsDir),
    visibility_timeout_s: VISIBILITY_S,
    policy_url: policy.url,
  })}\n`,
);

const commands = createInterface({ input: process.stdin });
commands.on("line", (line) => {
  void command(line.trim()).then(
    (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`),
    (err) => process.stdout.write(`${JSON.stringify({ error: (err as Error).message })}\n`),
  );
});
await new Promise<void>((resolve) => {
  commands.once("close", resolve);
  process.once("SIGTERM", resolve);
  process.once("SIGINT", resolve);
});
commands.close();
await Promise.all(runners.map((r) => stopGroup(r, 10_000)));
await stopGroup(proxy, 10_000);
await worker.dispose();
await Promise.all([policy.close(), s3.stop(), sqs.stop()]);
// A runner SIGKILLed above leaves its sessions' volumes mounted (as root): rm cannot remove a mount point.
await unmountUnder(root);
await rm(root, { recursive: true, force: true });
process.exit(0);

async function command(line: string): Promise<unknown> {
  const start = /^start-runner ([01])$/.exec(line);
  if (start) {
    const n = Number(start[1]);
    const old = runners[n];
    // A kill the caller just sent may not have been reported yet.
    if (old !== null && alive(old))
      await Promise.race([once(old, "exit"), new Promise((r) => setTimeout(r, 5000))]);
    if (alive(runners[n])) throw new Error(`runner ${n} is still running (pid ${runners[n]?.pid})`);
    runners[n] = startRunner(n);
    return { runner: n, pid: runners[n]?.pid };
  }
  if (line === "restart-proxy") {
    await stopGroup(proxy, 10_000);
    proxy = await startProxy();
    return { proxy_url: proxyUrls[0], pid: proxy.pid };
  }
  if (line === "logs") return logs;
  throw new Error(`unknown command ${JSON.stringify(line)}`);
}

async function startProxy(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      POLAR,
      "proxy",
      ...["--upstream", policy.url, "--port", String(proxyPort), "--store", `s3://${s3.bucket}/${PREFIX}`],
      ...["--jobs-queue", queueUrl, "--control-token", CONTROL, "--admin-token", ADMIN],
      // The trainer registers an engine on this host.
      ...["--allow-replica-addresses", "loopback"],
    ],
    { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  keep("proxy", child);
  await new Promise<void>((resolve, reject) => {
    let out = "";
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (/listening on http:\/\//.test(out)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`polar proxy exited with ${code}: ${out}`)));
  });
  return child;
}

/** `polar runner` as its own process (and process group), so it can be killed like a lost node. */
function startRunner(n: number): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      POLAR,
      "runner",
      ...["--queue", queueUrl, "--store", `s3://${s3.bucket}/${PREFIX}`, "--proxy-url", proxyUrls[n]],
      // Few messages held each, so both runners take sessions of a step.
      ...["--run", "2", "--init", "1", "--ready", "1"],
      ...["--visibility-timeout", String(VISIBILITY_S), "--wait-seconds", "1"],
      ...["--grace-seconds", "5", "--sessions-dir", sessionsDir(n)],
    ],
    { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  keep(`runner-${n}`, child);
  return child;
}

/** Runner n's session dirs, `<session id>.<runner pid>.<k>` each while the session is held. */
function sessionsDir(n: number): string {
  return join(root, `sessions-${n}`);
}

function alive(child: ChildProcess | null): boolean {
  return child !== null && child.exitCode === null && child.signalCode === null;
}

/** SIGTERM to the child, then SIGKILL to its whole group (what it started) after `graceMs`. */
async function stopGroup(child: ChildProcess | null, graceMs: number): Promise<void> {
  if (child?.pid === undefined) return;
  const pid = child.pid;
  if (alive(child)) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, graceMs))]);
  }
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
