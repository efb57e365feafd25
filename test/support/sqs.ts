import type { AddressInfo } from "node:net";
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { createSqsServer } from "local-aws-sqs";

export interface StartedSqs {
  endpoint: string;
  client: SQSClient;
  /** Creates a queue; with `dlq` it gets a RedrivePolicy to that queue after `maxReceiveCount` receives. */
  createQueue(
    name: string,
    opts?: { dlq?: string; maxReceiveCount?: number; visibilityTimeout?: number },
  ): Promise<string>;
  /** Credentials and endpoint for a child process (`polar runner` in fault tests). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** A real SQS-compatible server (local-aws-sqs) on 127.0.0.1 with an ephemeral port. */
export async function startSqs(): Promise<StartedSqs> {
  const server = await createSqsServer({
    port: 0,
    hostname: "127.0.0.1",
    emulateQueueCreationLifecycle: false,
  });
  if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new SQSClient({
    region: "us-east-1",
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  return {
    endpoint,
    client,
    env: {
      AWS_ENDPOINT_URL_SQS: endpoint,
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      AWS_REGION: "us-east-1",
    },
    async createQueue(name, opts = {}) {
      const attributes: Record<string, string> = {};
      if (opts.visibilityTimeout !== undefined) attributes.VisibilityTimeout = String(opts.visibilityTimeout);
      if (opts.dlq) {
        const arn = await client.send(
          new GetQueueAttributesCommand({ QueueUrl: opts.dlq, AttributeNames: ["QueueArn"] }),
        );
        attributes.RedrivePolicy = JSON.stringify({
          deadLetterTargetArn: arn.Attributes?.QueueArn,
          maxReceiveCount: opts.maxReceiveCount ?? 3,
        });
      }
      const out = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
      if (!out.QueueUrl) throw new Error(`local SQS did not return a URL for ${name}`);
      return out.QueueUrl;
    },
    async stop() {
      client.destroy();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
