import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { Queue, QueueMessage, ReceiveOptions } from "./queue.ts";

export interface SqsQueueOptions {
  url: string;
  client?: SQSClient;
  /** Overrides the endpoint (else AWS_ENDPOINT_URL_SQS, else the queue URL's origin when not AWS). */
  endpoint?: string;
  region?: string;
}

/** SQS caps a batch (send and receive) at 10 messages. */
const SQS_BATCH = 10;

/**
 * Amazon SQS (or any SQS-compatible server). Dead-lettering is the queue's own RedrivePolicy;
 * the runner adds a client-side fallback by receive count for servers that lack it.
 */
export class SqsQueue implements Queue {
  readonly url: string;
  readonly client: SQSClient;
  private readonly ownsClient: boolean;

  constructor(opts: SqsQueueOptions) {
    this.url = opts.url;
    this.ownsClient = !opts.client;
    this.client = opts.client ?? new SQSClient(sqsClientConfig(opts.url, opts.endpoint, opts.region));
  }

  async send(bodies: string[]): Promise<void> {
    for (let i = 0; i < bodies.length; i += SQS_BATCH) {
      const batch = bodies.slice(i, i + SQS_BATCH);
      const out = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.url,
          Entries: batch.map((body, j) => ({ Id: String(j), MessageBody: body })),
        }),
      );
      if (out.Failed && out.Failed.length > 0) {
        const f = out.Failed[0];
        throw new Error(
          `SQS SendMessageBatch to ${this.url} failed for ${out.Failed.length} of ${batch.length} messages: ${f.Code} ${f.Message ?? ""}`,
        );
      }
    }
  }

  async receive(max: number, opts: ReceiveOptions = {}): Promise<QueueMessage[]> {
    if (opts.signal?.aborted) return [];
    try {
      const out = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: this.url,
          MaxNumberOfMessages: Math.min(Math.max(max, 1), SQS_BATCH),
          WaitTimeSeconds: Math.min(opts.waitSeconds ?? 0, 20),
          VisibilityTimeout: opts.visibilityTimeoutSeconds,
          MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp"],
          // Older SQS-compatible servers only know the deprecated name.
          AttributeNames: ["All"],
        }),
        { abortSignal: opts.signal },
      );
      return (out.Messages ?? []).map((m) => ({
        handle: m.ReceiptHandle ?? "",
        messageId: m.MessageId ?? "",
        body: m.Body ?? "",
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? "1"),
        sentAt: m.Attributes?.SentTimestamp ? Number(m.Attributes.SentTimestamp) : undefined,
      }));
    } catch (err) {
      if (opts.signal?.aborted) return [];
      throw err;
    }
  }

  async extend(msg: QueueMessage, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.url,
        ReceiptHandle: msg.handle,
        VisibilityTimeout: Math.round(seconds),
      }),
    );
  }

  async release(msg: QueueMessage): Promise<void> {
    await this.extend(msg, 0);
  }

  async ack(msg: QueueMessage): Promise<void> {
    await this.client.send(new DeleteMessageCommand({ QueueUrl: this.url, ReceiptHandle: msg.handle }));
  }

  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }
}

/**
 * A queue URL that is not on AWS (a local SQS-compatible server) is its own endpoint, and such servers
 * accept any credentials: fall back to placeholder ones so `polar runner --queue http://...` just works.
 */
export function sqsClientConfig(url: string, endpoint?: string, region?: string) {
  const fromEnv = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL;
  let resolved = endpoint ?? fromEnv;
  if (!resolved) {
    const parsed = new URL(url);
    if (!parsed.hostname.endsWith(".amazonaws.com")) resolved = parsed.origin;
  }
  const local = resolved !== undefined && !new URL(resolved).hostname.endsWith(".amazonaws.com");
  const hasCreds = Boolean(process.env.AWS_ACCESS_KEY_ID || process.env.AWS_PROFILE);
  return {
    region:
      region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? regionOf(url) ?? "us-east-1",
    endpoint: resolved,
    credentials: local && !hasCreds ? { accessKeyId: "local", secretAccessKey: "local" } : undefined,
  };
}

function regionOf(url: string): string | undefined {
  return /sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(url)?.[1];
}
