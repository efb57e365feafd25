/** At-least-once job queue (SQS semantics): visibility timeout, receive count, dead-letter after N receives. */
export interface QueueMessage {
  /** Opaque handle for ack/extend/release (SQS ReceiptHandle). */
  handle: string;
  messageId: string;
  body: string;
  /** 1 on first delivery. */
  receiveCount: number;
  /** When the message was first sent (ms since the epoch), if the backend says. */
  sentAt?: number;
}

export interface ReceiveOptions {
  waitSeconds?: number;
  visibilityTimeoutSeconds?: number;
  /** Ends a long poll early (graceful shutdown); the receive then returns what it has. */
  signal?: AbortSignal;
}

export interface Queue {
  readonly url: string;
  send(bodies: string[]): Promise<void>;
  /** Long-polls up to `waitSeconds` for at most `max` messages (SQS caps at 10). */
  receive(max: number, opts?: ReceiveOptions): Promise<QueueMessage[]>;
  /** Keeps a message invisible for `seconds` more (the heartbeat while a session works). */
  extend(msg: QueueMessage, seconds: number): Promise<void>;
  /** Returns a message to the queue at once (visibility 0), e.g. on graceful shutdown. */
  release(msg: QueueMessage): Promise<void>;
  /** Deletes the message: only after POSTRUN wrote the result. */
  ack(msg: QueueMessage): Promise<void>;
  close(): Promise<void>;
}
