/**
 * Checks a presigned S3 GET URL against the AWS SDK's own SigV4 implementation (@smithy/signature-v4,
 * which @aws-sdk/client-s3 brings): s3rver does not verify V4 signatures, so a download from it
 * alone would not show that AWS S3 or R2 would accept the URL.
 */
import { createHash, createHmac } from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";

type SourceData = string | ArrayBuffer | ArrayBufferView;

/** The SDK's Checksum interface over node:crypto (its own sha256 packages are not hoisted). */
class NodeSha256 {
  private readonly secret?: SourceData;
  private hash: ReturnType<typeof createHash>;
  constructor(secret?: SourceData) {
    this.secret = secret;
    this.hash = this.fresh();
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
  private fresh() {
    if (this.secret === undefined) return createHash("sha256");
    const key = typeof this.secret === "string" ? this.secret : new Uint8Array(bytesOf(this.secret));
    return createHmac("sha256", key) as unknown as ReturnType<typeof createHash>;
  }
}

function bytesOf(data: ArrayBuffer | ArrayBufferView): ArrayBuffer {
  if (data instanceof ArrayBuffer) return data;
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

/** The signature the SDK computes for the same URL, credentials, date and expiry. */
export async function sdkPresignSignature(
  presigned: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  region = "us-east-1",
): Promise<string> {
  const url = new URL(presigned);
  const d = url.searchParams.get("X-Amz-Date") ?? "";
  const signingDate = new Date(
    `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({
    credentials,
    region,
    service: "s3",
    sha256: NodeSha256,
    uriEscapePath: false,
  });
  // As @aws-sdk/s3-request-presigner does: unsigned payload, not hoisted into the query.
  const unsigned = new Set(["x-amz-content-sha256"]);
  const out = await signer.presign(
    {
      method: "GET",
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query: {},
      headers: { host: url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
    },
    {
      expiresIn: Number(url.searchParams.get("X-Amz-Expires")),
      signingDate,
      unsignableHeaders: unsigned,
      unhoistableHeaders: unsigned,
    },
  );
  return String(out.query?.["X-Amz-Signature"]);
}
