import { Base64Error, base64ToBytes } from "../../shared/encoding/base64.ts";
import { parseDataUrl } from "../../shared/images/data-url.ts";
import { imageStructure } from "../../shared/images/image-structure.ts";
import { IMAGE_MEDIA_TYPES, supportedImageType } from "../../shared/images/image-types.ts";
import type { ChatRequest } from "../chat/types.ts";
import { CodecError } from "../codecs/codec.ts";

export interface ImagePolicy {
  /** Largest decoded image, in bytes (`Limits.maxImageBytes`). */
  maxImageBytes: number;
  /** Largest image in pixels, as its header declares them (`Limits.maxImagePixels`). */
  maxImagePixels: number;
  /** Image parts one call may carry, repeats counted (`Limits.maxImagesPerCall`). */
  maxImagesPerCall: number;
  /**
   * Pass http(s) image URLs to the engine, which then fetches them. Off by default: the engine
   * would reach any address the harness names, and the capture would hold a URL, not the image.
   */
  allowRemoteImages: boolean;
}

const REMOTE = /^https?:\/\//i;

/**
 * Checks every image part of the normalized request before any engine sees it or anything is
 * stored: at most `maxImagesPerCall` parts (counted before any is decoded); inline images must be
 * base64 labelled with a supported type, within the byte cap, and a well-formed image of that
 * family (shared/images/image-structure.ts says what that means) of at most `maxImagePixels`;
 * remote URLs only when the operator allows them, and only http(s) (a `file:` URL would make the
 * engine read its own disk). An image repeated in the call is checked once. Token counts
 * (count-tokens.ts) are checked the same way before the engine's `/tokenize` sees them. Returns each distinct
 * inline image's bytes (what the session's store budget is charged for). Throws CodecError (400)
 * naming the image and the limit.
 */
export function vetImages(chat: Pick<ChatRequest, "messages">, policy: ImagePolicy): Uint8Array[] {
  const urls: string[] = [];
  for (const m of chat.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content) if (part.type === "image_url") urls.push(part.image_url.url);
  }
  if (urls.length > policy.maxImagesPerCall)
    throw new CodecError(
      400,
      `the request has ${urls.length} images, over this proxy's cap of ${policy.maxImagesPerCall} images per call (--max-images-per-call)`,
    );
  const seen = new Map<string, Uint8Array | null>();
  for (const [i, url] of urls.entries()) {
    if (seen.has(url)) continue;
    seen.set(url, vetOne(url, `image ${i + 1} of the request`, policy));
  }
  return [...seen.values()].filter((b): b is Uint8Array => b !== null);
}

function vetOne(url: string, which: string, policy: ImagePolicy): Uint8Array | null {
  const data = parseDataUrl(url);
  if (!data) {
    if (url.startsWith("data:"))
      throw new CodecError(400, `${which}: a data URL must be base64 (data:<type>;base64,<data>)`);
    if (!REMOTE.test(url))
      throw new CodecError(
        400,
        `${which}: image URL scheme of ${preview(url)} is not supported; send the image inline as base64`,
      );
    if (!policy.allowRemoteImages)
      throw new CodecError(
        400,
        `${which}: remote image URLs (${preview(url)}) are refused by this proxy (the operator allows them with --allow-remote-images); send the image inline as base64`,
      );
    return null;
  }
  if (!supportedImageType(data.mediaType))
    throw new CodecError(
      400,
      `${which}: image media type ${JSON.stringify(data.mediaType)} is not supported; supported: ${IMAGE_MEDIA_TYPES.join(", ")}`,
    );
  // Decoded size is 3/4 of the text: refuse an oversized image before decoding it.
  const approx = Math.floor((data.payload.length * 3) / 4);
  if (approx > policy.maxImageBytes + 2) throw overCap(which, approx, policy.maxImageBytes);
  if (data.payload.length === 0) throw new CodecError(400, `${which}: the image data is empty`);
  let bytes: Uint8Array;
  try {
    bytes = base64ToBytes(data.payload);
  } catch (err) {
    if (!(err instanceof Base64Error)) throw err;
    throw new CodecError(400, `${which}: the image data does not decode as base64 (${err.message})`);
  }
  if (bytes.byteLength > policy.maxImageBytes) throw overCap(which, bytes.byteLength, policy.maxImageBytes);
  // A supported image labelled as another supported type passes: the engine reads the bytes, not
  // the label (vLLM opens images with PIL), and harnesses do mislabel (a JPEG sent as image/png).
  const image = imageStructure(bytes);
  if (!image.ok)
    throw new CodecError(
      400,
      `${which}: the image data is not a decodable image (${image.problem}), though its media type says ${data.mediaType}`,
    );
  if (image.pixels > policy.maxImagePixels)
    throw new CodecError(
      400,
      `${which} is ${image.width}x${image.height} pixels, over this proxy's image pixel cap of ${policy.maxImagePixels} pixels (--max-image-pixels)`,
    );
  return bytes;
}

function overCap(which: string, bytes: number, cap: number): CodecError {
  return new CodecError(
    400,
    `${which} is ${mib(bytes)}, over this proxy's image size cap of ${mib(cap)} (${cap} bytes; --max-image-mb)`,
  );
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(2)} MiB`;
}

function preview(url: string): string {
  return JSON.stringify(url.length > 80 ? `${url.slice(0, 77)}...` : url);
}
