import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";

// `wrangler deploy --dry-run` builds the Worker exactly as a deploy would, without an account.
// Every outbound HTTP(S) request of wrangler is routed to a dead local port, so this proves the
// build is offline.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONFIG = join(ROOT, "infra/wrangler.jsonc");
const outdir = mkdtempSync(join(tmpdir(), "polar-wrangler-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const NODE_BUILTINS =
  "assert|async_hooks|buffer|child_process|crypto|dns|events|fs|http|http2|https|net|os|path|perf_hooks|process|stream|string_decoder|tls|url|util|worker_threads|zlib";

describe("wrangler deploy --dry-run", () => {
  it("bundles proxy-worker/worker.ts offline into a Worker with no Node-only modules", () => {
    const env: Record<string, string> = { ...(process.env as Record<string, string>) };
    for (const name of Object.keys(env)) if (name.startsWith("CLOUDFLARE_")) delete env[name];
    Object.assign(env, {
      CI: "true",
      WRANGLER_SEND_METRICS: "false",
      WRANGLER_LOG_PATH: join(outdir, "logs"),
      XDG_CONFIG_HOME: join(outdir, "config"),
      NODE_USE_ENV_PROXY: "1",
      HTTP_PROXY: "http://127.0.0.1:9",
      HTTPS_PROXY: "http://127.0.0.1:9",
      NO_PROXY: "",
    });
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
        "deploy",
        "-c",
        CONFIG,
        "--dry-run",
        "--outdir",
        join(outdir, "dist"),
      ],
      { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 },
    );
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/--dry-run: exiting now/);
    expect(run.stdout).toMatch(/env\.CAPTURES \(polar-store\)\s+R2 Bucket/);

    const bundle = readFileSync(join(outdir, "dist/worker.js"), "utf8");
    expect(bundle).toContain("/v1/tasks");
    const nodeImports = bundle.match(/(?:from\s*|import\s*\(\s*|require\s*\(\s*)["']node:[^"']+["']/g) ?? [];
    expect(nodeImports).toEqual([]);
    const bareBuiltins =
      bundle.match(new RegExp(`(?:from\\s*|require\\s*\\(\\s*)["'](?:${NODE_BUILTINS})["']`, "g")) ?? [];
    expect(bareBuiltins).toEqual([]);
    // No nodejs_compat: nothing may rely on the Node polyfills.
    expect(readFileSync(CONFIG, "utf8")).not.toMatch(/"compatibility_flags"[^\]]*nodejs_compat/);

    // Workers allow 3 MB (free) / 10 MB (paid) compressed; keep well under the free limit.
    const gzipped = gzipSync(bundle).byteLength;
    console.log(
      `worker bundle: ${(bundle.length / 1024).toFixed(0)} KiB, gzip ${(gzipped / 1024).toFixed(0)} KiB`,
    );
    expect(gzipped).toBeLessThan(1024 * 1024);
  });
});
