import type { Queue, QueueMessage } from "../queue/queue.ts";

export interface Heartbeat {
  stop(): void;
}

/**
 * Keeps a message invisible while its session works: every third of the visibility timeout it is
 * extended by a full timeout, so one missed beat does not make it visible to another runner.
 * A runner that dies stops beating, and the message comes back after at most one timeout.
 */
export function startHeartbeat(
  queue: Queue,
  msg: QueueMessage,
  visibilitySeconds: number,
  onError: (err: unknown) => void,
): Heartbeat {
  const timer = setInterval(
    () => {
      queue.extend(msg, visibilitySeconds).catch(onError);
    },
    Math.max(200, (visibilitySeconds * 1000) / 3),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
