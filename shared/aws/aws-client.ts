import { AwsClient } from "aws4fetch";

/**
 * Static AWS credentials. In a Worker they come from secrets; there is no instance-role chain there,
 * which is why this code signs requests itself (aws4fetch: SigV4 over fetch + WebCrypto) instead of
 * using the AWS SDK, whose browser build also needs DOMParser for S3's XML and workerd has none.
 */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A SigV4 signer for one service and region. Retries 5xx/429 a couple of times with jittered backoff. */
export function awsClient(credentials: AwsCredentials, service: "s3" | "sqs", region: string): AwsClient {
  return new AwsClient({
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    sessionToken: credentials.sessionToken || undefined,
    service,
    region,
    retries: 2,
    initRetryMs: 100,
  });
}

/** Credentials from the standard AWS_* variables, or null when they are not both set. */
export function credentialsFromEnv(env: Record<string, unknown>): AwsCredentials | null {
  const id = env.AWS_ACCESS_KEY_ID;
  const secret = env.AWS_SECRET_ACCESS_KEY;
  if (typeof id !== "string" || typeof secret !== "string" || id === "" || secret === "") return null;
  const token = env.AWS_SESSION_TOKEN;
  return {
    accessKeyId: id,
    secretAccessKey: secret,
    sessionToken: typeof token === "string" ? token : undefined,
  };
}

/** First line of an AWS error body (XML `<Message>` or JSON `message`), for error messages. */
export function awsErrorDetail(body: string): string {
  const xml = /<Code>([^<]*)<\/Code>[\s\S]*?<Message>([^<]*)<\/Message>/.exec(body);
  if (xml) return `${xml[1]}: ${xml[2]}`;
  try {
    const json = JSON.parse(body) as { __type?: string; message?: string; Message?: string };
    const type = json.__type?.split("#").pop();
    const message = json.message ?? json.Message;
    if (type || message) return [type, message].filter(Boolean).join(": ");
  } catch {
    // not JSON: fall through to the raw text
  }
  return body.slice(0, 200).trim() || "(empty body)";
}
