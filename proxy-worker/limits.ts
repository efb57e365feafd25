/**
 * Request limits, enforced as the body streams in: a missing or lying content-length cannot get
 * past the size cap, and a body that trickles in is cut by the deadlines instead of holding a
 * connection (and its buffered chunks) for minutes.
 */

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
/** The whole body must arrive within this. A 32 MiB body needs ~9 Mbit/s to make it. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/** No byte for this long cuts the body, whatever time is left of the total. */
export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;
/** Arrays and objects nested deeper than this are refused before parsing (tool schemas use ~10). */
export const DEFAULT_MAX_JSON_DEPTH = 128;

/** Largest image (decoded) a request may carry; a 4K PNG screenshot is 2-8 MiB. */
export const DEFAULT_MAX_IMAGE_BYTES = 10 * 1024 * 1024;
/**
 * Largest image, in pixels (width x height as its header declares them), before anything decodes
 * it: 4096x4096 holds a 5K screenshot (14.7 Mpx). A decoder allocates by this, not by the file's
 * size: a 300 KB PNG can declare 50000x50000 (7.5 GB as RGB).
 */
export const DEFAULT_MAX_IMAGE_PIXELS = 4096 * 4096;
/** Image parts one call may carry (repeats counted): Anthropic's API takes at most 100. */
export const DEFAULT_MAX_IMAGES_PER_CALL = 100;
/** New image objects one session may add to the store, and their bytes (images/session-budget.ts). */
export const DEFAULT_MAX_SESSION_IMAGES = 4096;
export const DEFAULT_MAX_SESSION_IMAGE_BYTES = 1024 * 1024 * 1024;

export interface Limits {
  maxBodyBytes: number;
  maxImageBytes: number;
  maxImagePixels: number;
  maxImagesPerCall: number;
  maxSessionImages: number;
  maxSessionImageBytes: number;
  bodyTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  maxJsonDepth: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  maxImageBytes: DEFAULT_MAX_IMAGE_BYTES,
  maxImagePixels: DEFAULT_MAX_IMAGE_PIXELS,
  maxImagesPerCall: DEFAULT_MAX_IMAGES_PER_CALL,
  maxSessionImages: DEFAULT_MAX_SESSION_IMAGES,
  maxSessionImageBytes: DEFAULT_MAX_SESSION_IMAGE_BYTES,
  bodyTimeoutMs: DEFAULT_BODY_TIMEOUT_MS,
  bodyIdleTimeoutMs: DEFAULT_BODY_IDLE_TIMEOUT_MS,
  maxJsonDepth: DEFAULT_MAX_JSON_DEPTH,
};

/** Defaults filled in; throws naming the first limit that is not a positive number. */
export function resolveLimits(given: Partial<Limits> | undefined): Limits {
  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(given ?? {}) as [keyof Limits, number | undefined][]) {
    if (value === undefined) continue;
    if (!(value > 0)) throw new Error(`limits.${name} must be positive, got ${value}`);
    limits[name] = value;
  }
  return limits;
}

export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`request body exceeds the proxy limit of ${limit} bytes (${(limit / 1048576).toFixed(0)} MiB)`);
    this.limit = limit;
  }
}

export class BodyTimeoutError extends Error {}

type BodyDeadlines = Pick<Limits, "maxBodyBytes" | "bodyTimeoutMs" | "bodyIdleTimeoutMs">;

/**
 * Reads the whole body, or throws BodyTooLargeError as soon as more than `maxBodyBytes` arrived,
 * BodyTimeoutError when it is not complete within `bodyTimeoutMs` or stalls for `bodyIdleTimeoutMs`.
 */
export async function readBodyLimited(request: Request, limits: BodyDeadlines): Promise<Uint8Array> {
  const { maxBodyBytes } = limits;
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBodyBytes) throw new BodyTooLargeError(maxBodyBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const deadline = Date.now() + limits.bodyTimeoutMs;
  try {
    for (;;) {
      const { done, value } = await readWithin(reader, limits, deadline, total);
      if (done) break;
      total += value.byteLength;
      if (total > maxBodyBytes) throw new BodyTooLargeError(maxBodyBytes);
      chunks.push(value);
    }
  } catch (err) {
    // Frees the connection's buffered bytes now rather than when the client gives up.
    reader.cancel().catch(() => {});
    throw err;
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

function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limits: BodyDeadlines,
  deadline: number,
  received: number,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  const left = deadline - Date.now();
  const idle = limits.bodyIdleTimeoutMs < left;
  const wait = Math.max(0, idle ? limits.bodyIdleTimeoutMs : left);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const why = idle
        ? `no byte of the request body arrived for ${seconds(limits.bodyIdleTimeoutMs)}`
        : `the request body did not arrive within ${seconds(limits.bodyTimeoutMs)}`;
      reject(new BodyTimeoutError(`${why} (${received} bytes received); send the body at once`));
    }, wait);
  });
  return Promise.race([reader.read(), expired]).finally(() => clearTimeout(timer));
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
