import { MemoryQueue } from "./memory-queue.ts";
import type { Queue } from "./queue.ts";
import { SqsQueue } from "./sqs-queue.ts";

export interface OpenQueueOptions {
  visibilityTimeoutSeconds?: number;
  maxReceiveCount?: number;
  deadLetter?: Queue;
}

/** `memory` -> an in-process MemoryQueue (with an in-process dead-letter queue); an http(s) URL -> SQS. */
export function openQueue(spec: string, opts: OpenQueueOptions = {}): Queue {
  if (spec === "memory" || spec.startsWith("memory://")) {
    const deadLetter = opts.deadLetter instanceof MemoryQueue ? opts.deadLetter : undefined;
    return new MemoryQueue({
      url: spec === "memory" ? "memory://queue" : spec,
      visibilityTimeoutSeconds: opts.visibilityTimeoutSeconds,
      maxReceiveCount: opts.maxReceiveCount,
      deadLetter,
    });
  }
  if (/^https?:\/\//.test(spec)) return new SqsQueue({ url: spec });
  throw new Error(
    `queue ${JSON.stringify(spec)}: expected "memory" or an SQS queue URL (https://sqs.../123/name)`,
  );
}
