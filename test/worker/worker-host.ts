/**
 * Runs proxy-worker/worker.ts in workerd (Miniflare) for tests: the Worker is bundled with esbuild the
 * way wrangler bundles it (ESM, workerd/worker/browser conditions, no Node polyfills), so a Node-only
 * import fails the build here just as it would fail the deploy.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

const ENTRY = fileURLToPath(new URL("../../proxy-worker/worker.ts", import.meta.url));
export const COMPATIBILITY_DATE = "2025-11-01";

let bundled: Promise<string> | undefined;

/** The Worker as one ESM file (built once per test file). */
export function bundleWorker(): Promise<string> {
  bundled ??= build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    logLevel: "silent",
  }).then((out) => out.outputFiles[0].text);
  return bundled;
}

export interface WorkerSpec {
  name: string;
  /** Plain-text vars and secrets. */
  vars: Record<string, string>;
  /** Give the Worker the CAPTURES R2 binding. */
  r2?: boolean;
}

export interface WorkerHost {
  mf: Miniflare;
  /** The first Worker over HTTP on 127.0.0.1 (an ephemeral port), for clients outside this process. */
  url: string;
  /** A request to the named Worker. */
  fetch(worker: string, path: string, init?: RequestInit): Promise<Response>;
  dispose(): Promise<void>;
}

export async function startWorkers(specs: WorkerSpec[]): Promise<WorkerHost> {
  const code = await bundleWorker();
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    workers: specs.map((spec) => ({
      config: {
        name: spec.name,
        compatibilityDate: COMPATIBILITY_DATE,
        manifest: { mainModule: "worker.js", modules: { "worker.js": { type: "esm", contents: code } } },
        env: {
          ...Object.fromEntries(Object.entries(spec.vars).map(([k, v]) => [k, { type: "text", value: v }])),
          ...(spec.r2 ? { CAPTURES: { type: "r2", name: `${spec.name}-store` } } : {}),
        },
      },
    })),
  } as unknown as ConstructorParameters<typeof Miniflare>[0]);
  const url = (await mf.ready).toString().replace(/\/$/, "");
  return {
    mf,
    url,
    async fetch(worker, path, init) {
      const fetcher = await mf.getWorker(worker);
      // Miniflare's fetch returns its own Response class (undici's); normalize to the global one.
      const res = await fetcher.fetch(`http://polar.test${path}`, init as never);
      return new Response(res.body as ReadableStream | null, {
        status: res.status,
        headers: res.headers as unknown as HeadersInit,
      });
    },
    dispose: () => mf.dispose(),
  };
}
