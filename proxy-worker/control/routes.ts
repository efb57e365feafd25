import { createRoute } from "@hono/zod-openapi";
import { TaskRequest } from "../../shared/schemas/task.ts";
import {
  CancelBody,
  ErrorBody,
  StatusBody,
  SubmittedBody,
  TaskIdParam,
  TrajectoriesBody,
} from "./schemas.ts";

/** The control API's routes as OpenAPI operations; handlers live in mount-control.ts. */

const json = <T>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

const security = [{ adminToken: [] }];
const unauthorized = json(ErrorBody, "missing or wrong admin token");
const notFound = json(ErrorBody, "no task with this id");

export const submitRoute = createRoute({
  method: "post",
  path: "/v1/tasks",
  summary: "Submit a TaskRequest: store tasks/{id}.json and enqueue one SessionJob per sample",
  security,
  request: { body: { ...json(TaskRequest, "a TaskRequest (defaults applied server-side)"), required: true } },
  responses: {
    201: json(
      SubmittedBody,
      "stored and enqueued (or already stored identically: only missing sessions enqueued)",
    ),
    400: json(ErrorBody, "not a valid TaskRequest; the message names the fields"),
    401: unauthorized,
    409: json(ErrorBody, "the task id was already submitted with a different request"),
    502: json(ErrorBody, "the store or the queue failed"),
  },
});

export const statusRoute = createRoute({
  method: "get",
  path: "/v1/tasks/{id}",
  summary: "Task status: session counts from results/, shard key once complete",
  security,
  request: { params: TaskIdParam },
  responses: { 200: json(StatusBody, "status"), 401: unauthorized, 404: notFound },
});

export const cancelRoute = createRoute({
  method: "delete",
  path: "/v1/tasks/{id}",
  summary: "Cancel a task: writes cancel/{id}; runners stop its sessions and skip queued ones",
  security,
  request: { params: TaskIdParam },
  responses: {
    202: json(CancelBody, "cancel marker written"),
    401: unauthorized,
    404: notFound,
    409: json(ErrorBody, "the task already completed: there is nothing to cancel"),
  },
});

export const trajectoriesRoute = createRoute({
  method: "get",
  path: "/v1/tasks/{id}/trajectories",
  summary: "Shard and result keys of a task, with presigned GET URLs when the store is S3",
  security,
  request: { params: TaskIdParam },
  responses: { 200: json(TrajectoriesBody, "keys and URLs"), 401: unauthorized, 404: notFound },
});
