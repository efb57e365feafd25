import { type Context, Hono } from "hono";
import { stateOf, taskMarkers } from "../../proxy-worker/control/task-status.ts";
import { InvalidIdError, isValidId } from "../../shared/ids.ts";
import { SHA256_HEX } from "../../shared/images/image-refs.ts";
import { sniffImageType } from "../../shared/images/image-types.ts";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { type Asset, loadAssets } from "./static-assets.ts";
import { StoreView, ViewError } from "./store-view.ts";
import { captureRow, sessionRow, taskSummary, traceRow } from "./summaries.ts";
import { type TokenDecoder, tracePayload } from "./trace-payload.ts";

export interface ViewerOptions {
  store: ObjectStore;
  /** Loaded on the first trace request (the tokenizer takes ~1 s to load). */
  decoder: () => TokenDecoder;
  /**
   * Answer only requests addressed to a loopback name (default true: `polar view` on 127.0.0.1).
   * False only behind credentials (see mount.ts), where the host is a real server's name.
   */
  loopbackOnly?: boolean;
}

/**
 * The viewer: a read-only JSON API over a store and the single page that renders it. It never
 * writes to the store. Every id in a path is checked before it becomes a store key.
 */
export function createViewerApp(opts: ViewerOptions): Hono {
  const view = new StoreView(opts.store);
  const assets = loadAssets();
  let decoder: TokenDecoder | null = null;
  const dec = () => {
    decoder ??= opts.decoder();
    return decoder;
  };
  const app = new Hono();

  // A page on another site that rebinds its DNS name to 127.0.0.1 could otherwise read the store
  // through the user's browser: only requests addressed to a loopback name are answered.
  app.use("*", async (c, next) => {
    if (opts.loopbackOnly !== false && !isLoopbackHost(c.req.header("host")))
      return c.json({ error: "polar view answers only on 127.0.0.1 or localhost" }, 403);
    await next();
    c.header("x-content-type-options", "nosniff");
    c.header("referrer-policy", "no-referrer");
    c.header("cache-control", "no-store");
  });

  app.onError((err, c) => {
    if (err instanceof InvalidIdError || err instanceof RangeError)
      return c.json({ error: err.message }, 400);
    if (err instanceof ViewError) return c.json({ error: err.message }, 422);
    console.error(`polar view: ${err.stack ?? err.message}`);
    return c.json({ error: `internal error: ${err.message}` }, 500);
  });

  app.get("/", (c) => {
    c.header("content-security-policy", assets.csp);
    return c.html(assets.index);
  });
  app.get("/web/:name", (c) => serveAsset(c, assets.web.get(c.req.param("name"))));
  app.get("/vendor/:name", (c) => serveAsset(c, assets.vendor.get(c.req.param("name"))));

  app.get("/api/info", (c) => c.json({ store: opts.store.url }));

  app.get("/api/tasks", async (c) => {
    const ids = await view.taskIds();
    const tasks = await Promise.all(
      ids.map(async (id) => {
        const { results, bad } = await view.results(id);
        return { ...taskSummary(id, results, bad), state: await taskState(opts.store, id) };
      }),
    );
    return c.json({ store: opts.store.url, tasks });
  });

  app.get("/api/tasks/:task", async (c) => {
    const task = id(c.req.param("task"), "task_id");
    const { results, bad } = await view.results(task);
    return c.json({
      ...taskSummary(task, results, bad),
      state: await taskState(opts.store, task),
      definition: await view.task(task),
    });
  });

  app.get("/api/tasks/:task/sessions/:session", async (c) => {
    const task = id(c.req.param("task"), "task_id");
    const session = id(c.req.param("session"), "session_id");
    const loaded = await view.result(task, session);
    const captureKeys = await view.captureKeys(task, session);
    if (!loaded && captureKeys.length === 0) return c.json({ error: `no session ${task}/${session}` }, 404);
    const captures = await Promise.all(
      captureKeys.map(async (key) => {
        try {
          const rec = await view.capture(key);
          return rec ? captureRow(rec, loaded) : { key, error: "missing" };
        } catch (err) {
          return { key, error: (err as Error).message };
        }
      }),
    );
    const r = loaded?.result;
    return c.json({
      task_id: task,
      session_id: session,
      row: loaded ? sessionRow(loaded) : null,
      agent: r?.agent ?? null,
      evaluation: r?.evaluation ?? null,
      artifacts: r?.artifacts ?? [],
      builder: r?.trajectory.builder ?? null,
      stats: r ? { ...r.trajectory.reconstruction_stats, ...loaded?.statsExtras } : null,
      traces: loaded ? loaded.result.trajectory.traces.map((_, i) => traceRow(loaded, i)) : [],
      captures,
    });
  });

  app.get("/api/tasks/:task/sessions/:session/traces/:index", async (c) => {
    const task = id(c.req.param("task"), "task_id");
    const session = id(c.req.param("session"), "session_id");
    const index = Number(c.req.param("index"));
    if (!Number.isInteger(index) || index < 0)
      return c.json({ error: "trace index must be an integer >= 0" }, 400);
    const loaded = await view.result(task, session);
    if (!loaded) return c.json({ error: `no result for ${task}/${session}` }, 404);
    if (index >= loaded.result.trajectory.traces.length)
      return c.json(
        { error: `trace ${index} does not exist (${loaded.result.trajectory.traces.length} traces)` },
        404,
      );
    return c.json(tracePayload(loaded, index, dec()));
  });

  /**
   * One stored image (`blobs/sha256/{hash}`), served only when its bytes are one of the image types
   * the proxy accepts, with that type: never as HTML or SVG, whatever a client sent.
   */
  app.get("/api/images/:hash", async (c) => {
    const hash = c.req.param("hash");
    if (!SHA256_HEX.test(hash))
      return c.json({ error: "an image is named by its sha256 (64 hex digits)" }, 400);
    const bytes = await view.object(keys.imageBlob(hash));
    if (!bytes) return c.json({ error: `no image ${hash} in the store` }, 404);
    const type = sniffImageType(bytes);
    if (!type) return c.json({ error: `${keys.imageBlob(hash)} is not a PNG, JPEG, GIF or WebP image` }, 422);
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
      "content-type": type,
      "content-security-policy": "default-src 'none'",
    });
  });

  /** An artifact the session's result lists, as text (never rendered as HTML). */
  app.get("/api/tasks/:task/sessions/:session/artifact", async (c) => {
    const task = id(c.req.param("task"), "task_id");
    const session = id(c.req.param("session"), "session_id");
    const key = c.req.query("key") ?? "";
    const loaded = await view.result(task, session);
    if (!loaded?.result.artifacts?.includes(key))
      return c.json({ error: "not an artifact of this session" }, 404);
    const bytes = await view.object(key);
    if (!bytes) return c.json({ error: `${key} is listed but missing from the store` }, 404);
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { "content-type": "text/plain; charset=utf-8" });
  });

  return app;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The task's state by the control API's rule (a cancelled task is `cancelled`, never `completed`,
 * even once its shard is written), so the viewer and `GET /v1/tasks/{id}` agree.
 */
async function taskState(store: ObjectStore, taskId: string) {
  const m = await taskMarkers(store, taskId);
  return stateOf({ cancelled: m.cancelled, completed: m.jsonlKey !== null, started: m.started });
}

function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0];
  return LOOPBACK.has((name ?? "").toLowerCase());
}

function id(value: string, what: string): string {
  if (!isValidId(value)) throw new InvalidIdError(`${what} ${JSON.stringify(value)} is not a valid id`);
  return value;
}

function serveAsset(c: Context, asset: Asset | undefined) {
  if (!asset) return c.notFound();
  return c.body(asset.body, 200, { "content-type": asset.type });
}
