import { Base64Error, base64ToBytes } from "../../shared/encoding/base64.ts";
import { parseDataUrl } from "../../shared/images/data-url.ts";
import { IMAGE_MEDIA_TYPES, sniffImageType, supportedImageType } from "../../shared/images/image-types.ts";
import type { ChatRequest } from "../chat/types.ts";
import { CodecError } from "../codecs/codec.ts";

export interface ImagePolicy {
  /** Largest decoded image, in bytes (`Limits.maxImageBytes`). */
  maxImageBytes: number;
  /**
   * Pass http(s) image URLs to the engine, which then fetches them. Off by default: the engine
   * would reach any address the harness names, and the capture would hold a URL, not the image.
   */
  allowRemoteImages: boolean;
}

const REMOTE = /^https?:\/\//i;

/**
 * Checks every image part of the normalized request before any engine sees it: inline images must
 * be base64 labelled with a supported type, whose bytes carry a supported type's signature, within
 * the cap; remote
 * URLs only when the operator allows them, and only http(s) (a `file:` URL would make the engine
 * read its own disk). Throws CodecError (400) naming the image, the cap or the type.
 */
export function vetImages(chat: ChatRequest, policy: ImagePolicy): void {
  let n = 0;
  for (const m of chat.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content) {
      if (part.type !== "image_url") continue;
      n += 1;
      vetOne(part.image_url.url, `image ${n} of the request`, policy);
    }
  }
}

function vetOne(url: string, which: string, policy: ImagePolicy): void {
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
    return;
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
  if (!sniffImageType(bytes))
    throw new CodecError(
      400,
      `${which}: the image data is not a decodable image (no PNG, JPEG, GIF or WebP signature), though its media type says ${data.mediaType}`,
    );
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
