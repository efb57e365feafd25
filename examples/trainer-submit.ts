// A trainer's side of Polar, over HTTP only: submit a task to the proxy's control API, wait for the
// runners to finish it, download its trajectory shard and print the rows a GRPO step would read.
//
//   node examples/trainer-submit.ts --proxy http://127.0.0.1:8787 [--control-token T] \
//        [--tasks examples/tasks.jsonl] [--task-id hello-file] [--as new-id] [--timeout-s 600] [--out shard.parquet]
//
// The proxy must run with the control API on: locally `polar serve` (one command: proxy, queue, store and a
// runner), or `polar proxy ... --jobs-queue SQS_URL --control-token T` (or the Worker with JOBS_QUEUE_URL and
// POLAR_CONTROL_TOKEN) with runners consuming that queue. The shard is fetched through the URL the proxy hands
// out (presigned for S3 stores, signed local URLs with `polar serve`); see docs/control-api.md.
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { parquetReadObjects } from "hyparquet";
import { parseTasksJsonl } from "../batch-runner/submit.ts";

const { values } = parseArgs({
  options: {
    proxy: { type: "string" },
    "control-token": { type: "string" },
    "admin-token": { type: "string" },
    tasks: { type: "string", default: new URL("./tasks.jsonl", import.meta.url).pathname },
    "task-id": { type: "string" },
    as: { type: "string" },
    "timeout-s": { type: "string", default: "600" },
    out: { type: "string" },
  },
});
const proxy = values.proxy?.replace(/\/+$/, "");
// The control token; a proxy configured without one accepts its admin token instead.
const token =
  values["control-token"] ??
  process.env.POLAR_CONTROL_TOKEN ??
  values["admin-token"] ??
  process.env.POLAR_ADMIN_TOKEN;
if (!proxy || !token) {
  console.error(
    "usage: node examples/trainer-submit.ts --proxy URL --control-token T (or POLAR_CONTROL_TOKEN; --admin-token on a proxy without one)",
  );
  process.exit(2);
}
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${proxy}${path}`, {
    method,
    headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok)
    throw new Error(`${method} ${path}: HTTP ${res.status}: ${json?.error?.message ?? JSON.stringify(json)}`);
  return json;
}

// 1. The task: a line of a TaskRequest JSONL file (the first, or --task-id), optionally renamed. Read
// with the parser `polar run` and `polar submit` use, so `//` lines and every check are the same.
const parsed = parseTasksJsonl(await readFile(values.tasks as string, "utf8"));
for (const e of parsed.errors) console.error(`${values.tasks}:${e.line}: ${e.message}`);
if (parsed.errors.length > 0) process.exit(1);
const found = values["task-id"] ? parsed.tasks.find((t) => t.task_id === values["task-id"]) : parsed.tasks[0];
if (!found) {
  console.error(`no task ${values["task-id"] ?? "at all"} in ${values.tasks}`);
  process.exit(1);
}
const task = { ...found, task_id: values.as ?? found.task_id };

const submitted = await call("POST", "/v1/tasks", task);
console.log(
  `submitted ${submitted.task_id}: ${submitted.enqueued} sessions enqueued, ${submitted.skipped} already done`,
);

// 2. Poll until the group shard exists (every session terminal).
const deadline = Date.now() + Number(values["timeout-s"]) * 1000;
let status = await call("GET", `/v1/tasks/${task.task_id}`);
let shown = "";
while (status.state !== "completed") {
  if (status.state === "cancelled") throw new Error(`task ${task.task_id} was cancelled`);
  if (Date.now() > deadline)
    throw new Error(`task ${task.task_id} not complete after ${values["timeout-s"]} s`);
  const line = `${status.state}: ${status.counts.finished}/${status.num_samples} sessions finished`;
  if (line !== shown) console.log(line);
  shown = line;
  await new Promise((r) => setTimeout(r, 500));
  status = await call("GET", `/v1/tasks/${task.task_id}`);
}
const { COMPLETED, TIMEOUT, ERROR } = status.counts;
console.log(
  `completed: ${COMPLETED} COMPLETED, ${TIMEOUT} TIMEOUT, ${ERROR} ERROR; shard ${status.shard_key}`,
);

// 3. Download the shard through its presigned URL and print its rows.
const listing = await call("GET", `/v1/tasks/${task.task_id}/trajectories`);
if (!listing.shard) {
  console.log("the task produced no trace, so there is no Parquet shard");
  process.exit(0);
}
if (!listing.shard.url) {
  console.log(`the store cannot presign; read ${listing.shard.key} from the bucket directly`);
  process.exit(0);
}
const download = await fetch(listing.shard.url);
if (!download.ok) throw new Error(`downloading the shard: HTTP ${download.status}`);
const bytes = await download.arrayBuffer();
if (values.out) await writeFile(values.out, new Uint8Array(bytes));
const rows = await parquetReadObjects({ file: bytes });
console.log(`shard: ${bytes.byteLength} bytes, ${rows.length} rows`);
for (const row of rows) {
  const mask = row.loss_mask as number[];
  const trainable = mask.filter((m) => m === 1).length;
  console.log(
    `row session=${row.session_id} trace=${row.trace_index} status=${row.status} reward=${row.reward ?? null} ` +
      `prompt=${(row.prompt_ids as number[]).length} response=${(row.response_ids as number[]).length} trainable=${trainable}`,
  );
}
