/**
 * gzip through the Web Compression Streams API, which Workers and Node both provide.
 * (No compression level is exposed there; the runtime default is used.) Hosts with a faster
 * compressor (the Node adapter: node:zlib at a lower level, no stream machinery) pass their own
 * `GzipFn` where a hot path compresses; anything that writes the gzip format will do.
 */

/**
 * A piece of a document to compress. `dense` marks packed token data: text that may be close to
 * incompressible, which a compressor can code without string matching when a sample shows
 * matching does not pay (deflate's match search is slowest on exactly such data).
 */
export interface GzipPart {
  bytes: Uint8Array;
  dense?: boolean;
}

/** Compresses the concatenation of `parts` to one gzip member (RFC 1952). */
export type GzipFn = (parts: readonly GzipPart[]) => Promise<Uint8Array> | Uint8Array;

/** Decompressed size limit, so a small hostile body cannot expand into gigabytes. */
export const DEFAULT_MAX_GUNZIP_BYTES = 512 * 1024 * 1024;

export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return gzipParts([{ bytes }]);
}

/** The portable `GzipFn`: the parts stream through one CompressionStream, never concatenated. */
export async function gzipParts(parts: readonly GzipPart[]): Promise<Uint8Array> {
  return collect(
    streamOf(parts.map((p) => p.bytes)).pipeThrough(new CompressionStream("gzip")),
    Number.POSITIVE_INFINITY,
  );
}

/** Throws `GzipError` for input that is not gzip, is truncated, or expands beyond `maxBytes`. */
export async function gunzip(bytes: Uint8Array, maxBytes = DEFAULT_MAX_GUNZIP_BYTES): Promise<Uint8Array> {
  if (bytes.length < 18 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    throw new GzipError("not gzip data: missing the 1f 8b header");
  }
  try {
    return await collect(streamOf([bytes]).pipeThrough(new DecompressionStream("gzip")), maxBytes);
  } catch (err) {
    if (err instanceof GzipError) throw err;
    throw new GzipError(`corrupt gzip data: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export class GzipError extends Error {}

// Typed as BufferSource: that is what the compression streams' writable side takes.
function streamOf(chunks: readonly Uint8Array[]): ReadableStream<BufferSource> {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) if (c.length > 0) controller.enqueue(c as Uint8Array<ArrayBuffer>);
      controller.close();
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new GzipError(`gzip data expands beyond ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
