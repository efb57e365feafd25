import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** What a newcomer types first: versions, help, and the warnings that save an hour. */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const polar = join(repo, "bin/polar.js");

function polarCli(args: string[], node = process.execPath) {
  return spawnSync(node, [polar, ...args], { cwd: repo, encoding: "utf8", timeout: 60_000 });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-cli-help-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every flag is described on a line of its own in the usage text, not only in the synopsis. */
function described(usage: string, flag: string): boolean {
  const body = usage.slice(usage.indexOf("\n\n"));
  return new RegExp(`^\\s+(--[\\w-]+(?: [A-Z_|./:-]+)?, )*--${flag}\\b`, "m").test(body);
}

describe("polar help", () => {
  it("--version prints the package version", () => {
    const res = polarCli(["--version"]);
    expect(res.status).toBe(0);
    const { version } = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
    expect(res.stdout).toMatch(new RegExp(`^polar ${version.replace(/\./g, "\\.")} \\(node v\\d+`));
  });

  it("`polar help CMD` is `polar CMD --help`, and a mistyped command gets a suggestion", () => {
    const help = polarCli(["help", "run"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toBe(polarCli(["run", "--help"]).stdout);
    expect(help.stdout).toMatch(/^Usage: polar run/);
    const typo = polarCli(["rnu"]);
    expect(typo.status).toBe(2);
    expect(typo.stderr).toContain('unknown command "rnu" (did you mean "run"?)');
  });

  it("describes every option of run and runner, with the defaults the docs give", () => {
    const run = polarCli(["run", "--help"]).stdout;
    for (const flag of [
      "upstream",
      "engine",
      "out",
      "run",
      "init",
      "ready",
      "postrun",
      "max-receives",
      "skip-invalid",
      "docker-bin",
    ])
      expect(described(run, flag), `polar run --${flag}`).toBe(true);
    expect(run).toMatch(
      /--max-receives N\s+attempts per session before it is recorded as ERROR \(default 3;/,
    );
    expect(run).toMatch(/1 when any ended in ERROR/);
    expect(run).toContain("docs/tasks.md");
    const runner = polarCli(["runner", "--help"]).stdout;
    for (const flag of [
      "queue",
      "store",
      "proxy-url",
      "init",
      "run",
      "postrun",
      "ready",
      "dlq-url",
      "max-receives",
      "results-queue",
      "metrics-port",
      "visibility-timeout",
      "wait-seconds",
      "grace-seconds",
      "sessions-dir",
      "harness-cache",
      "docker-bin",
      "apptainer-bin",
      "apptainer-mode",
    ])
      expect(described(runner, flag), `polar runner --${flag}`).toBe(true);
    expect(runner).toMatch(/--max-receives N\s+deliveries before .*\(5\)/);
    const submit = polarCli(["submit", "--help"]).stdout;
    expect(submit).toContain("docs/tasks.md");
  });

  it("`polar runner --queue memory` warns that it will idle", async () => {
    const child = spawn(
      process.execPath,
      [
        polar,
        "runner",
        "--queue",
        "memory",
        "--store",
        join(dir, "store"),
        "--proxy-url",
        "http://127.0.0.1:1",
      ],
      { cwd: repo, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, POLAR_SIGNING_KEY: "short" } },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no warning: ${stderr}`)), 30_000);
      const poll = setInterval(() => {
        if (stderr.includes("polar runner: memory://") || stderr.includes("polar runner: memory:")) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 50);
    });
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    expect(stderr).toContain("--queue memory starts empty and nothing else can reach it");
    expect(stderr).toContain("POLAR_SIGNING_KEY is 5 characters");
  });
});

/** The Node that ships with many distributions; bin/polar.js must explain itself there. */
const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find(
  (p) =>
    existsSync(p) &&
    Number(spawnSync(p, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).stdout) < 22,
);

describe("bin/polar.js on an old Node", () => {
  it.skipIf(!oldNode)(
    "says which Node is needed and how to get it, instead of ERR_UNKNOWN_FILE_EXTENSION",
    () => {
      const res = polarCli(["run", "--help"], oldNode);
      expect(res.status).toBe(1);
      expect(res.stderr).toMatch(/polar needs Node\.js 24 \(at least 22\.18/);
      expect(res.stderr).toContain("npm install --prefix ~/.cache/polar-node24 node@24");
      expect(res.stderr).not.toContain("ERR_UNKNOWN_FILE_EXTENSION");
    },
  );
});
