import type { Hono } from "hono";

const HOW =
  "this proxy runs without the task control API. Locally, `polar serve` runs the proxy with it, an " +
  "in-memory queue, a directory store and a runner in one command; otherwise start the proxy with " +
  "`--jobs-queue SQS_URL --admin-token T` (Worker: JOBS_QUEUE_URL and POLAR_ADMIN_TOKEN). See docs/control-api.md.";

/** Without `control`, a call to the control API gets a 404 that says how to turn it on. */
export function mountControlHint(app: Hono): void {
  const hint = () => Response.json({ error: { message: `not found: ${HOW}` } }, { status: 404 });
  app.all("/v1/tasks", hint);
  app.all("/v1/tasks/*", hint);
  app.all("/v1/replicas", hint);
  app.all("/v1/policy-version", hint);
  app.get("/openapi.json", hint);
}
