/**
 * The one queue operation the control API needs. batch-runner's `Queue` (SQS via the SDK, or
 * in-memory) satisfies it structurally; in a Worker `SqsSender` does.
 */
export interface JobSender {
  /** Human-readable location, e.g. the queue URL. */
  readonly url: string;
  send(bodies: string[]): Promise<void>;
}
