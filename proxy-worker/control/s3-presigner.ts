import { credentialsFromEnv } from "../../shared/aws/aws-client.ts";
import { S3FetchStore } from "../../shared/store/s3-fetch-store.ts";
import type { ControlDeps } from "./control-deps.ts";

/**
 * Presigned GET URLs for an `s3://bucket/prefix` store from the standard AWS variables
 * (AWS_ENDPOINT_URL_S3, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). Undefined for other
 * stores, or without static credentials (presigning signs with the secret key itself): the control
 * API then lists keys only.
 */
export function presignerForStoreSpec(
  spec: string,
  env: Record<string, string | undefined>,
): ControlDeps["presignGet"] | undefined {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(spec);
  const credentials = credentialsFromEnv(env);
  if (!match || !credentials) return undefined;
  const signer = new S3FetchStore({
    bucket: match[1],
    prefix: match[2],
    endpoint: env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined,
    credentials,
  });
  return (key, seconds) => signer.presignGet(key, seconds);
}
