import type { AwsClient } from "aws4fetch";
import { type AwsCredentials, awsClient, awsErrorDetail } from "../aws/aws-client.ts";
import type { JobSender } from "./job-sender.ts";

export interface SqsSenderOptions {
  /** e.g. `https://sqs.us-east-1.amazonaws.com/123456789012/polar-jobs` or a local server's queue URL. */
  queueUrl: string;
  credentials: AwsCredentials;
  /** Default: from an AWS queue URL, else us-east-1. */
  region?: string;
  /** Where the API calls go. Default: the queue URL's origin. */
  endpoint?: string;
}

/** SQS caps SendMessageBatch at 10 entries and 256 KiB in total. */
const SQS_BATCH = 10;

/**
 * Sends session jobs with SQS's JSON protocol (`AmazonSQS.SendMessageBatch`) over fetch + SigV4,
 * so it runs in Workers as well as Node. Receiving stays with the runner's SDK-based queue.
 */
export class SqsSender implements JobSender {
  readonly url: string;
  private readonly aws: AwsClient;
  private readonly endpoint: string;

  constructor(opts: SqsSenderOptions) {
    let parsed: URL;
    try {
      parsed = new URL(opts.queueUrl);
    } catch {
      throw new Error(
        `queue URL ${JSON.stringify(opts.queueUrl)} is not a URL: expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`,
      );
    }
    this.url = opts.queueUrl;
    this.endpoint = opts.endpoint?.replace(/\/+$/, "") ?? parsed.origin;
    const region =
      opts.region ?? /sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(parsed.hostname)?.[1] ?? "us-east-1";
    this.aws = awsClient(opts.credentials, "sqs", region);
  }

  async send(bodies: string[]): Promise<void> {
    for (let i = 0; i < bodies.length; i += SQS_BATCH) {
      const batch = bodies.slice(i, i + SQS_BATCH);
      const res = await this.aws.fetch(`${this.endpoint}/`, {
        method: "POST",
        headers: {
          "content-type": "application/x-amz-json-1.0",
          "x-amz-target": "AmazonSQS.SendMessageBatch",
        },
        body: JSON.stringify({
          QueueUrl: this.url,
          Entries: batch.map((body, j) => ({ Id: String(j), MessageBody: body })),
        }),
      });
      const text = await res.text();
      if (!res.ok) {
        throw new Error(
          `SQS SendMessageBatch to ${this.url} failed: HTTP ${res.status}: ${awsErrorDetail(text)}`,
        );
      }
      let out: { Failed?: Array<{ Code?: string; Message?: string }> };
      try {
        out = JSON.parse(text);
      } catch {
        throw new Error(
          `SQS SendMessageBatch to ${this.url}: the answer is not JSON (${text.slice(0, 120)})`,
        );
      }
      const failed = out.Failed ?? [];
      if (failed.length > 0) {
        throw new Error(
          `SQS SendMessageBatch to ${this.url} failed for ${failed.length} of ${batch.length} messages: ${failed[0].Code} ${failed[0].Message ?? ""}`,
        );
      }
    }
  }
}
