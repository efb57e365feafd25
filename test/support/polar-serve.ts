/**
 * `polar serve` (dry-run policy unless `args` names an `--upstream`, directory store under `dir`)
 * as a child, for tests that drive its control API.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;

export type PolarServe = {
  url: string;
  token: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
};

export async function startPolarServe(dir: string, args: string[] = []): Promise<PolarServe> {
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin/polar.js"), "serve", "--port", "0", "--out", dir, ...args],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, POLAR_CONTROL_TOKEN: "" },
    },
  );
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  child.stderr?.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  const [url, token] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`polar serve did not start:\n${out}`)), 60_000);
    const poll = setInterval(() => {
      const m = /--proxy (http:\/\/127\.0\.0\.1:\d+) --control-token ([0-9a-f]+)/.exec(out);
      if (m) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve([m[1], m[2]]);
      }
    }, 50);
    child.once("exit", (code) => reject(new Error(`polar serve exited ${code}:\n${out}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  };
  return { url, token, child, output: () => out, stop };
}
