import { createHash } from "node:crypto";
import type { z } from "zod";
import { isValidId } from "../shared/ids.ts";
import { keys } from "../shared/keys.ts";
import { type SessionJob, StoredTask, TaskRequest } from "../shared/schemas/task.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import type { Queue } from "./queue/queue.ts";

export interface TaskLineError {
  line: number;
  message: string;
}

export interface ParsedTasks {
  tasks: TaskRequest[];
  errors: TaskLineError[];
}

/** Parses a TaskRequest JSONL file; every bad line is reported with its number and the field path. */
export function parseTasksJsonl(text: string): ParsedTasks {
  const tasks: TaskRequest[] = [];
  const errors: TaskLineError[] = [];
  const seen = new Map<string, number>();
  text.split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "" || raw.trimStart().startsWith("//")) return;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      errors.push({ line, message: `not valid JSON: ${(err as Error).message}` });
      return;
    }
    const parsed = TaskRequest.safeParse(json);
    if (!parsed.success) {
      errors.push({ line, message: formatIssues(parsed.error) });
      return;
    }
    const first = seen.get(parsed.data.task_id);
    if (first !== undefined) {
      errors.push({
        line,
        message: `task_id: ${JSON.stringify(parsed.data.task_id)} already used on line ${first}`,
      });
      return;
    }
    seen.set(parsed.data.task_id, line);
    tasks.push(parsed.data);
  });
  return { tasks, errors };
}

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}

/**
 * Deterministic: `${task_id}-${sample_index}`. Resubmitting the same file yields the same session ids,
 * so sessions that already have a result are skipped (and a redelivered job is acknowledged), and the
 * group shard's rows are the same whoever runs it. Overlong ids keep a readable prefix plus a hash.
 */
export function sessionIdFor(taskId: string, sampleIndex: number): string {
  const plain = `${taskId}-${sampleIndex}`;
  if (isValidId(plain)) return plain;
  const hash = createHash("sha256").update(taskId).digest("hex").slice(0, 16);
  return `${taskId.slice(0, 100).replace(/[.-]+$/, "")}-${hash}-${sampleIndex}`;
}

export interface SubmitResult {
  tasks: number;
  /** Jobs put on the queue. */
  enqueued: number;
  /** Sessions skipped because their result already exists (a resubmission). */
  skipped: number;
}

export class TaskConflictError extends Error {}

/**
 * Writes `tasks/{task_id}.json` and enqueues one SessionJob per sample still without a result.
 * A task id already stored with a different request is refused: its sessions would mix two tasks.
 */
export async function submitTasks(
  store: ObjectStore,
  queue: Queue,
  tasks: TaskRequest[],
  now: () => Date = () => new Date(),
): Promise<SubmitResult> {
  const result: SubmitResult = { tasks: 0, enqueued: 0, skipped: 0 };
  for (const task of tasks) {
    await storeTask(store, task, now());
    const done = new Set(await store.list(keys.resultsOfTask(task.task_id)));
    const bodies: string[] = [];
    for (let i = 0; i < task.num_samples; i++) {
      const sessionId = sessionIdFor(task.task_id, i);
      if (done.has(keys.result(task.task_id, sessionId))) {
        result.skipped++;
        continue;
      }
      const job: SessionJob = { v: 1, task_id: task.task_id, session_id: sessionId, sample_index: i, task };
      bodies.push(JSON.stringify(job));
    }
    // Queue backends batch sends (SQS: 10 per SendMessageBatch).
    await queue.send(bodies);
    result.enqueued += bodies.length;
    result.tasks++;
  }
  return result;
}

async function storeTask(store: ObjectStore, task: TaskRequest, at: Date): Promise<void> {
  const key = keys.task(task.task_id);
  const stored: StoredTask = { ...task, submitted_at: at.toISOString() };
  if (await store.putIfAbsent(key, JSON.stringify(stored), { contentType: "application/json" })) return;
  const existing = await store.get(key);
  const previous = existing ? StoredTask.safeParse(JSON.parse(new TextDecoder().decode(existing))) : null;
  if (previous?.success) {
    const { submitted_at: _, ...request } = previous.data;
    if (JSON.stringify(request) === JSON.stringify(task)) return;
  }
  throw new TaskConflictError(
    `task_id ${JSON.stringify(task.task_id)} was already submitted with a different request (${key}); use a new task_id`,
  );
}
