/** Request size limits. The body is counted as it streams: a missing or lying content-length cannot get past. */

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface Limits {
  maxBodyBytes: number;
}

export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`request body exceeds the proxy limit of ${limit} bytes (${(limit / 1048576).toFixed(0)} MiB)`);
    this.limit = limit;
  }
}

/** Reads the whole body, or throws BodyTooLargeError as soon as more than `maxBytes` arrived. */
export async function readBodyLimited(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) throw new BodyTooLargeError(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}
