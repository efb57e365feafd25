import { createRoute } from "@hono/zod-openapi";
import { TaskRequest } from "../../shared/schemas/task.ts";
import {
  CancelBody,
  ErrorBody,
  PolicyVersionAnswer,
  ReplaceReplicasBody,
  ReplicaBody,
  ReplicasBody,
  SetPolicyVersionBody,
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
const unauthorized = json(ErrorBody, "missing or wrong control token");
const notFound = json(ErrorBody, "no task with this id");
const barredAddress = json(
  ErrorBody,
  "a loopback, link-local or metadata address the operator has not allowed (--allow-replica-addresses)",
);

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

const badBody = json(ErrorBody, "the body is not valid; the message names the field");
const noRuntimeState = json(
  ErrorBody,
  "this host was started without runtime state (ControlDeps.runtimeState): see docs/control-api.md",
);
const storeDown = json(
  ErrorBody,
  "the store holding the replica set and version could not be read or written; nothing was changed (retry)",
);

export const listReplicasRoute = createRoute({
  method: "get",
  path: "/v1/replicas",
  summary: "The engine replicas the proxy routes model calls to, with their health",
  security,
  responses: {
    200: json(ReplicasBody, "the replica set"),
    401: unauthorized,
    501: noRuntimeState,
    503: storeDown,
  },
});

export const registerReplicaRoute = createRoute({
  method: "post",
  path: "/v1/replicas",
  summary: "Register an engine replica (after its GET /health answers): it takes calls from the next one on",
  security,
  request: { body: { ...json(ReplicaBody, "the replica's base URL"), required: true } },
  responses: {
    200: json(ReplicasBody, "already in the set: nothing changed"),
    201: json(ReplicasBody, "registered"),
    400: badBody,
    401: unauthorized,
    403: barredAddress,
    422: json(ErrorBody, "the replica did not answer GET /health; the message names it"),
    501: noRuntimeState,
    503: storeDown,
  },
});

export const replaceReplicasRoute = createRoute({
  method: "put",
  path: "/v1/replicas",
  summary: "Replace the whole replica set (every new one must answer GET /health first; all or nothing)",
  security,
  request: { body: { ...json(ReplaceReplicasBody, "the replicas' base URLs"), required: true } },
  responses: {
    200: json(ReplicasBody, "the set is now exactly these replicas"),
    400: badBody,
    401: unauthorized,
    403: barredAddress,
    422: json(ErrorBody, "a new replica did not answer GET /health; the message names it"),
    501: noRuntimeState,
    503: storeDown,
  },
});

export const removeReplicaRoute = createRoute({
  method: "delete",
  path: "/v1/replicas",
  summary: "Remove a replica: no new call goes to it; calls already there finish",
  security,
  request: { body: { ...json(ReplicaBody, "the replica's base URL"), required: true } },
  responses: {
    200: json(ReplicasBody, "removed"),
    400: badBody,
    401: unauthorized,
    404: json(ErrorBody, "no such replica in the set"),
    409: json(ErrorBody, "it is the only replica left"),
    501: noRuntimeState,
    503: storeDown,
  },
});

export const getPolicyVersionRoute = createRoute({
  method: "get",
  path: "/v1/policy-version",
  summary: "The policy version stamped on captures whose engine reports none",
  security,
  responses: {
    200: json(PolicyVersionAnswer, "the version"),
    401: unauthorized,
    501: noRuntimeState,
    503: storeDown,
  },
});

export const setPolicyVersionRoute = createRoute({
  method: "put",
  path: "/v1/policy-version",
  summary: "The trainer names the weights it just synced (for engines that report no version)",
  security,
  request: {
    body: { ...json(SetPolicyVersionBody, "the new version, a non-negative integer"), required: true },
  },
  responses: {
    200: json(PolicyVersionAnswer, "set"),
    400: badBody,
    401: unauthorized,
    409: json(ErrorBody, "the version is lower than the current one"),
    501: noRuntimeState,
    503: storeDown,
  },
});
