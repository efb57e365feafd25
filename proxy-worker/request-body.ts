import { depthExceededAt } from "./json-depth.ts";
import { BodyTimeoutError, BodyTooLargeError, type Limits, readBodyLimited } from "./limits.ts";

/**
 * `bytes` is the body exactly as received: the capture stores it instead of re-serializing `json`.
 * A refused body says how many bytes the proxy took in (`received`), which its session is charged.
 */
export type BodyResult =
  | { ok: true; json: unknown; bytes: Uint8Array }
  | { ok: false; status: number; message: string; received: number };

const decoder = new TextDecoder("utf-8", { fatal: true });

/** The request body as JSON, or the 400/408/413 the client gets instead. Never throws. */
export async function readJsonBody(request: Request, limits: Limits): Promise<BodyResult> {
  let bytes: Uint8Array;
  try {
    bytes = await readBodyLimited(request, limits);
  } catch (err) {
    if (err instanceof BodyTooLargeError)
      return { ok: false, status: 413, message: err.message, received: err.limit };
    if (err instanceof BodyTimeoutError) return { ok: false, status: 408, message: err.message, received: 0 };
    return {
      ok: false,
      status: 400,
      message: `could not read the request body: ${(err as Error).message}`,
      received: 0,
    };
  }
  if (bytes.byteLength === 0)
    return { ok: false, status: 400, message: "request body is empty; expected a JSON object", received: 0 };
  const received = bytes.byteLength;
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch (err) {
    const message = `request body is not valid UTF-8: ${(err as Error).message}`;
    return { ok: false, status: 400, message, received };
  }
  const deepAt = depthExceededAt(text, limits.maxJsonDepth);
  if (deepAt >= 0) {
    return {
      ok: false,
      status: 400,
      message: `request body nests arrays/objects more than ${limits.maxJsonDepth} levels deep (at character ${deepAt}); the proxy refuses it before any inference`,
      received,
    };
  }
  try {
    return { ok: true, json: JSON.parse(text), bytes };
  } catch (err) {
    const message = `request body is not valid JSON: ${(err as Error).message}`;
    return { ok: false, status: 400, message, received };
  }
}
