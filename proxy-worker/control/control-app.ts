import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { keys } from "../../shared/keys.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { readStoredTask, submitTask, TaskConflictError } from "../../shared/tasks/submit-task.ts";
import { describeIssues, validateTask } from "../../shared/tasks/validate-task.ts";
import { formatIssues } from "../../shared/zod-issues.ts";
import { type CredentialList, matchesAny, parseCredentials, presentedCredential } from "../credentials.ts";
import { markAuthenticated } from "../fair-share/address-gate.ts";
import { depthExceededAt } from "../json-depth.ts";
import { DEFAULT_MAX_JSON_DEPTH } from "../limits.ts";
import type { ControlDeps, RuntimeState } from "./control-deps.ts";
import { errorBody } from "./error-body.ts";
import { mountPolicyVersionRoutes } from "./policy-version-api.ts";
import { mountReplicaRoutes } from "./replicas-api.ts";
import { cancelRoute, statusRoute, submitRoute, trajectoriesRoute } from "./routes.ts";
import { SharedStateError } from "./shared-state.ts";
import { taskStatus } from "./task-status.ts";

export interface ControlAppOptions {
  store: ObjectStore;
  control: ControlDeps;
  clock: () => number;
  log: (message: string) => void;
  /** The replica set and version the runtime routes change; null: they answer 501. */
  runtime: RuntimeState | null;
}

/** A TaskRequest is small; this bounds what an authenticated client can make the proxy parse. */
const MAX_TASK_BYTES = 1024 * 1024;
/** A replica list or a version: small (1,024 URLs of 2 KiB at most). */
const MAX_RUNTIME_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The task control API (`/v1/tasks...`) and its OpenAPI document (`/openapi.json`), as a Hono app
 * that createProxyApp mounts ahead of the provider routes. Stateless like the rest of the proxy:
 * everything it reports is read back from the store.
 */
export function createControlApp(opts: ControlAppOptions): OpenAPIHono {
  const { store, control, clock, log } = opts;
  const controlTokens = parseCredentials(control.controlToken);
  const tokens = controlTokens.length > 0 ? controlTokens : parseCredentials(control.adminToken);
  if (tokens.length === 0)
    throw new Error("the task control API needs a control token (POLAR_CONTROL_TOKEN) or an admin token");
  const expires = control.presignExpiresSeconds ?? 3600;
  const app = new OpenAPIHono({
    defaultHook: (result, c) => {
      if (result.success) return;
      if (!isTaskBody(c.req.method, c.req.path))
        return c.json(
          errorBody(
            `invalid ${result.target === "json" ? "body" : result.target}: ${formatIssues(result.error, 8)}`,
          ),
          400,
        );
      // A task body gets the whole submit-time check, so one answer names every mistake.
      const checked = result.target === "json" && "data" in result ? validateTask(result.data) : null;
      const problems = checked && !checked.ok ? checked.problems : describeIssues(result.error);
      return c.json(errorBody(`${invalidWhat(result.target)}: ${problems.slice(0, 8).join("; ")}`), 400);
    },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "adminToken", {
    type: "http",
    scheme: "bearer",
    description:
      "the proxy's control token (POLAR_CONTROL_TOKEN; the admin token where none is set); x-admin-token is accepted too",
  });
  const guard = controlGuard(tokens);
  app.use("/v1/tasks", guard, bodyLimit({ maxSize: MAX_TASK_BYTES, onError: tooLarge }), shallowJson);
  app.use("/v1/tasks/*", guard);
  const runtimeBody = bodyLimit({ maxSize: MAX_RUNTIME_BODY_BYTES, onError: tooLargeRuntime });
  const runtime = opts.runtime;
  const fresh = freshRuntime(runtime, log);
  app.use("/v1/replicas", guard, runtimeBody, fresh);
  app.use("/v1/policy-version", guard, runtimeBody, fresh);
  mountReplicaRoutes(app, runtime, clock, { ...control.replicaAddresses, log });
  mountPolicyVersionRoutes(app, runtime);

  app.openapi(submitRoute, async (c) => {
    const task = c.req.valid("json");
    const checked = validateTask(task);
    if (!checked.ok) return c.json(errorBody(`not a valid TaskRequest: ${checked.problems.join("; ")}`), 400);
    try {
      const out = await submitTask(store, control.jobs, task, new Date(clock()));
      return c.json({ ...out, status_url: `/v1/tasks/${out.task_id}` }, 201);
    } catch (err) {
      if (err instanceof TaskConflictError) return c.json(errorBody(err.message), 409);
      // The cause names the store or queue address: logged, not returned.
      log(`submit of ${task.task_id} failed: ${(err as Error).message}`);
      return c.json(
        errorBody(
          `submitting ${task.task_id} failed: the store or the job queue is failing (see the proxy's log)`,
        ),
        502,
      );
    }
  });

  app.openapi(statusRoute, async (c) => {
    const { id } = c.req.valid("param");
    const task = await readStoredTask(store, id);
    if (!task) return c.json(errorBody(noTask(id)), 404);
    return c.json(await taskStatus(store, task), 200);
  });

  app.openapi(cancelRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await readStoredTask(store, id))) return c.json(errorBody(noTask(id)), 404);
    // A marker after the fact would turn a finished group into a cancelled one.
    if ((await store.list(`trajectories/${id}.`)).includes(keys.shardJsonl(id)))
      return c.json(errorBody(`task ${id} already completed: there is nothing to cancel`), 409);
    const marker = JSON.stringify({ task_id: id, cancelled_at: new Date(clock()).toISOString() });
    const fresh = await store.putIfAbsent(keys.cancel(id), marker, { contentType: "application/json" });
    return c.json(
      { task_id: id, cancelled: true as const, cancel_key: keys.cancel(id), newly_cancelled: fresh },
      202,
    );
  });

  app.openapi(trajectoriesRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await readStoredTask(store, id))) return c.json(errorBody(noTask(id)), 404);
    const [resultKeys, shardKeys] = await Promise.all([
      store.list(keys.resultsOfTask(id)),
      store.list(`trajectories/${id}.`),
    ]);
    const sign = control.presignGet;
    const located = async (key: string) => ({ key, url: sign ? await sign(key, expires) : null });
    const present = (key: string) => (shardKeys.includes(key) ? located(key) : null);
    const resultPrefix = keys.resultsOfTask(id);
    return c.json(
      {
        task_id: id,
        complete: shardKeys.includes(keys.shardJsonl(id)),
        shard: await present(keys.shard(id)),
        shard_jsonl: await present(keys.shardJsonl(id)),
        results: await Promise.all(
          resultKeys
            .filter((k) => k.endsWith(".json"))
            .map(async (k) => ({
              session_id: k.slice(resultPrefix.length, -".json".length),
              ...(await located(k)),
            })),
        ),
        url_expires_in: sign ? expires : null,
      },
      200,
    );
  });

  app.doc("/openapi.json", {
    openapi: "3.0.0",
    info: {
      title: "Polar task control API",
      version: "1",
      description:
        "Submit rollout tasks, follow them and fetch their trajectory shards; register the engine replicas " +
        "a trainer starts and name the policy version it synced. Served by the Polar proxy " +
        "(Node or Cloudflare Worker); the provider endpoints (/v1/messages, /v1/chat/completions, " +
        "/v1/responses, /v1beta/models/...) are documented by their providers.",
    },
  });

  app.onError((err, c) => {
    if (err instanceof HTTPException && err.status < 500) return c.json(errorBody(err.message), err.status);
    log(`control API bug on ${c.req.method} ${new URL(c.req.url).pathname}: ${err.stack ?? err}`);
    return c.json(errorBody("internal error (details are in the proxy's log)"), 500);
  });
  return app;
}

function controlGuard(tokens: CredentialList): MiddlewareHandler {
  return async (c, next) => {
    if (!(await matchesAny(presentedCredential(c.req.raw.headers), tokens))) {
      return c.json(errorBody("missing or wrong control token (Authorization: Bearer <token>)"), 401);
    }
    markAuthenticated(c.req.raw);
    await next();
  };
}

/** Deep nesting is refused before the validator parses it (see json-depth.ts). Hono caches the text. */
const shallowJson: MiddlewareHandler = async (c, next) => {
  if (c.req.method === "POST") {
    const at = depthExceededAt(await c.req.text(), DEFAULT_MAX_JSON_DEPTH);
    if (at >= 0)
      return c.json(
        errorBody(`a task nests arrays/objects more than ${DEFAULT_MAX_JSON_DEPTH} levels deep`),
        400,
      );
  }
  await next();
};

/**
 * The runtime routes answer from the stored set and version, read after the call arrived (a
 * check like "no lower version" must see what other proxies wrote). 503 if the store cannot say.
 */
function freshRuntime(runtime: RuntimeState | null, log: (message: string) => void): MiddlewareHandler {
  return async (c, next) => {
    if (runtime) {
      try {
        await runtime.refresh();
      } catch (err) {
        if (!(err instanceof SharedStateError)) throw err;
        log(err.message);
        return c.json(errorBody(err.message), 503);
      }
    }
    await next();
  };
}

function tooLarge(c: Context): Response {
  return c.json(errorBody(`a task body must be at most ${MAX_TASK_BYTES} bytes`), 413);
}

function tooLargeRuntime(c: Context): Response {
  return c.json(errorBody(`a body must be at most ${MAX_RUNTIME_BODY_BYTES} bytes`), 413);
}

function isTaskBody(method: string, path: string): boolean {
  return method === "POST" && path === "/v1/tasks";
}

function noTask(id: string): string {
  return `no task ${JSON.stringify(id)}: it was never submitted to this store (tasks/${id}.json is missing)`;
}

/** The body is a TaskRequest; its issues name fields (with a "did you mean"), not "invalid json". */
function invalidWhat(target: string): string {
  return target === "json" ? "not a valid TaskRequest" : `invalid ${target}`;
}
