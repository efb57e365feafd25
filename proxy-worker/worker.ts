import type { Hono } from "hono";
import { createProxyApp } from "./app.ts";
import { depsFromEnv, WorkerConfigError } from "./worker-config.ts";

/**
 * The Cloudflare Worker entry: the same Hono app as on Node, configured from the Worker's env
 * (vars, secrets, the CAPTURES R2 binding; see infra/wrangler.jsonc). Built once per isolate and env.
 */
const built = new WeakMap<object, Hono | WorkerConfigError>();

function appFor(env: Record<string, unknown>): Hono | WorkerConfigError {
  let app = built.get(env);
  if (!app) {
    try {
      // A bare `fetch` reference loses its `this` in workerd ("Illegal invocation"), hence the wrapper.
      app = createProxyApp(depsFromEnv(env, (input, init) => fetch(input, init)));
    } catch (err) {
      if (!(err instanceof WorkerConfigError)) throw err;
      app = err;
    }
    built.set(env, app);
  }
  return app;
}

export default {
  fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Response | Promise<Response> {
    const app = appFor(env);
    if (app instanceof WorkerConfigError) {
      console.error(`[polar worker] ${app.message}`);
      return Response.json({ error: { type: "configuration_error", message: app.message } }, { status: 500 });
    }
    return app.fetch(request, env, ctx as never);
  },
};
