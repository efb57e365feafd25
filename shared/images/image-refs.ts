import { z } from "zod";
import { Base64Error, base64ToBytes, bytesToBase64 } from "../encoding/base64.ts";
import { parseDataUrl } from "./data-url.ts";
import { sniffImageType, supportedImageType } from "./image-types.ts";

/**
 * Images are kept once: a capture stores each image's bytes as its own object,
 * `blobs/sha256/{hex}` (`keys.imageBlob`), and puts a placeholder string at every place the image
 * was in `request` and `chat_request`, listed in `image_refs`. A session that re-sends its last
 * five screenshots on every call then stores each screenshot once, not five times per call.
 * Decoded records keep the placeholders (equal images give equal placeholders, so comparing
 * requests still works); `restoreImages` puts the bytes back for readers that show them.
 */

export const SHA256_HEX = /^[0-9a-f]{64}$/;

export const ImageRef = z.strictObject({
  /** Which body of the record the image was in. */
  field: z.enum(["request", "chat_request"]),
  /** Keys from the body's root to the string that held the image. */
  path: z.array(z.union([z.string(), z.number().int().nonnegative()])),
  /** SHA-256 of the image's bytes (not of its base64 text). */
  sha256: z.string().regex(SHA256_HEX),
  media_type: z.string(),
  /** `data_url`: the string was `data:{media_type};base64,{b64}`; `base64`: it was the bare base64. */
  form: z.enum(["data_url", "base64"]),
});
export type ImageRef = z.infer<typeof ImageRef>;

/** The placeholder left where an image was. Readers find images by `image_refs`, never by this text. */
export function imagePlaceholder(sha256: string): string {
  return `polar-image:sha256:${sha256}`;
}

export interface ImageBlob {
  sha256: string;
  mediaType: string;
  bytes: Uint8Array;
}

type Json = unknown;
type Path = (string | number)[];

interface Found {
  sha256: string;
  mediaType: string;
}

/**
 * The record's bodies with every inline image of `chat_request` replaced by its placeholder (in
 * `chat_request` and wherever the same data URL or base64 text stands in `request`), the refs,
 * and one blob per distinct image. Images whose base64 does not decode, or of a type the proxy does
 * not pass (never the case after `vetImages`), stay inline. With `keep: false` (a call that was not
 * answered) the placeholders stay but no image is kept: no refs, no blobs. Untouched bodies are
 * returned as the same objects.
 */
export async function externalizeImages<R extends { request: Json; chat_request: Json }>(
  rec: R,
  opts: { keep?: boolean } = {},
): Promise<{ record: R & { image_refs?: ImageRef[] }; blobs: ImageBlob[] }> {
  const byPayload = new Map<string, Found>();
  const blobs: ImageBlob[] = [];
  for (const url of chatImageUrls(rec.chat_request)) {
    const d = parseDataUrl(url);
    if (!d || byPayload.has(d.payload) || !supportedImageType(d.mediaType)) continue;
    let bytes: Uint8Array;
    try {
      bytes = base64ToBytes(d.payload);
    } catch (err) {
      if (err instanceof Base64Error) continue;
      throw err;
    }
    const sha256 = await sha256Hex(bytes);
    byPayload.set(d.payload, { sha256, mediaType: d.mediaType });
    // The object's content type is what its bytes are; the ref keeps the label for an exact restore.
    const mediaType = sniffImageType(bytes) ?? (supportedImageType(d.mediaType) as string);
    if (!blobs.some((b) => b.sha256 === sha256)) blobs.push({ sha256, mediaType, bytes });
  }
  if (byPayload.size === 0) return { record: rec, blobs };
  const refs: ImageRef[] = [];
  const swap = (field: ImageRef["field"]) => (s: string, path: Path) => {
    const asUrl = s.startsWith("data:") ? parseDataUrl(s) : null;
    const hit = asUrl ? byPayload.get(asUrl.payload) : byPayload.get(s);
    if (!hit) return null;
    const form = asUrl ? "data_url" : "base64";
    // Only a data URL the restore writes back exactly (its own label, no parameters) is replaced.
    if (asUrl && asUrl.prefix !== `data:${asUrl.mediaType};base64,`) return null;
    const media_type = asUrl ? asUrl.mediaType : hit.mediaType;
    refs.push({ field, path: [...path], sha256: hit.sha256, media_type, form });
    return imagePlaceholder(hit.sha256);
  };
  const request = mapStrings(rec.request, [], swap("request"));
  const chat_request = mapStrings(rec.chat_request, [], swap("chat_request"));
  if (opts.keep === false) {
    const { image_refs: _, ...rest } = rec as R & { image_refs?: ImageRef[] };
    return { record: { ...rest, request, chat_request } as R, blobs: [] };
  }
  return { record: { ...rec, request, chat_request, image_refs: refs }, blobs };
}

/** The images the engine was given, in prompt order (one entry per image part, repeats kept). */
export function engineImages(rec: { image_refs?: ImageRef[] | null }): ImageRef[] {
  return (rec.image_refs ?? []).filter((r) => r.field === "chat_request");
}

export class ImageBlobMissingError extends Error {}
export class ImageRefError extends Error {}

/** The record with each placeholder replaced by its image again; throws if a blob is gone. */
export async function restoreImages<
  R extends { request: Json; chat_request: Json; image_refs?: ImageRef[] | null },
>(rec: R, getBlob: (sha256: string) => Promise<Uint8Array | null>): Promise<R> {
  const refs = rec.image_refs ?? [];
  if (refs.length === 0) return rec;
  const b64 = new Map<string, string>();
  for (const r of refs) {
    if (b64.has(r.sha256)) continue;
    const bytes = await getBlob(r.sha256);
    if (!bytes) throw new ImageBlobMissingError(`image blob sha256:${r.sha256} is not in the store`);
    b64.set(r.sha256, bytesToBase64(bytes));
  }
  const out = structuredClone({ request: rec.request, chat_request: rec.chat_request });
  for (const r of refs) {
    const data = b64.get(r.sha256) as string;
    setAt(out, [r.field, ...r.path], r.form === "data_url" ? `data:${r.media_type};base64,${data}` : data);
  }
  return { ...rec, ...out };
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** `image_url.url` of every image part, in message order (the normalized body's only image slot). */
function* chatImageUrls(chat: Json): Generator<string> {
  if (!isRecord(chat) || !Array.isArray(chat.messages)) return;
  for (const m of chat.messages) {
    if (!isRecord(m) || !Array.isArray(m.content)) continue;
    for (const part of m.content) {
      if (isRecord(part) && part.type === "image_url" && isRecord(part.image_url)) {
        const url = part.image_url.url;
        if (typeof url === "string") yield url;
      }
    }
  }
}

/** A copy of `v` with each string `f` maps to a non-null value replaced; untouched subtrees are shared. */
function mapStrings(v: Json, path: Path, f: (s: string, path: Path) => string | null): Json {
  if (typeof v === "string") return f(v, path) ?? v;
  if (Array.isArray(v)) {
    let out: Json[] | null = null;
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const x = mapStrings(v[i], path, f);
      path.pop();
      if (x === v[i]) continue;
      out ??= v.slice();
      out[i] = x;
    }
    return out ?? v;
  }
  if (isRecord(v)) {
    let out: Record<string, Json> | null = null;
    for (const [k, x] of Object.entries(v)) {
      path.push(k);
      const y = mapStrings(x, path, f);
      path.pop();
      if (y === x) continue;
      out ??= { ...v };
      out[k] = y;
    }
    return out ?? v;
  }
  return v;
}

/** Only along own keys to an existing string: a stored ref cannot reach a prototype or add a key. */
function setAt(root: Record<string, Json>, path: Path, value: string): void {
  let node: Json = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i];
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key))
      throw new ImageRefError(`image ref path ${JSON.stringify(path)} does not lead to a stored value`);
    if (i === path.length - 1) {
      if (typeof (node as Record<string | number, Json>)[key] !== "string")
        throw new ImageRefError(`image ref path ${JSON.stringify(path)} does not lead to a placeholder`);
      (node as Record<string | number, Json>)[key] = value;
    } else node = (node as Record<string | number, Json>)[key];
  }
}

function isRecord(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
