import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `polar serve` on a host without bwrap: its advice names an option serve itself accepts. */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const polar = join(repo, "bin/polar.js");

let dir: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "polar-serve-unsandboxed-"));
  // A PATH with node and nothing else: no bwrap to find.
  await symlink(process.execPath, join(dir, "node"));
  env = { ...process.env, PATH: dir, POLAR_CONTROL_TOKEN: "" };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("polar serve without bwrap", () => {
  it("refuses to start, advising --allow-unsandboxed, and starts with it", async () => {
    const refused = spawnSync(process.execPath, [polar, "serve", "--port", "0", "--out", join(dir, "a")], {
      cwd: repo,
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(refused.status).toBe(1);
    const advised = /pass (--[a-z-]+)/.exec(refused.stderr)?.[1];
    expect(advised).toBe("--allow-unsandboxed");

    const serve = spawn(
      process.execPath,
      [polar, "serve", "--port", "0", "--out", join(dir, "b"), advised as string],
      {
        cwd: repo,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    serve.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    serve.stderr.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const poll = setInterval(() => {
          if (/viewer at http:\/\/127\.0\.0\.1:\d+\/viewer\//.test(out)) {
            clearInterval(poll);
            resolve();
          }
        }, 100);
        serve.once("exit", (code) => {
          clearInterval(poll);
          reject(new Error(`polar serve exited ${code}: ${out}`));
        });
      });
      expect(out).toMatch(/Sessions run UNSANDBOXED/);
    } finally {
      serve.kill("SIGTERM");
      await new Promise((r) => serve.once("exit", r));
    }
  }, 90_000);
});
