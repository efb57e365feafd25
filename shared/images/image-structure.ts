import type { Checked } from "./formats/bytes.ts";
import { checkGif } from "./formats/gif.ts";
import { checkJpeg } from "./formats/jpeg.ts";
import { checkPng } from "./formats/png.ts";
import { checkWebp } from "./formats/webp.ts";
import { type ImageMediaType, sniffImageType } from "./image-types.ts";

const CHECKS: Record<ImageMediaType, (b: Uint8Array) => Checked> = {
  "image/png": checkPng,
  "image/jpeg": checkJpeg,
  "image/gif": checkGif,
  "image/webp": checkWebp,
};

export type ImageStructure =
  | { ok: true; type: ImageMediaType; width: number; height: number; pixels: number }
  | { ok: false; problem: string };

/**
 * What "decodes" means at the proxy, where no native decoder runs (Workers): the bytes carry a
 * supported type's signature and are that format's container, whole and well formed (each
 * format's rule is in formats/), with the declared width and height read from its header. The
 * compressed pixel data is not inflated, so a stream that is corrupt inside passes; its size, which
 * is what a decoder allocates for, is known before anything decodes it.
 */
export function imageStructure(bytes: Uint8Array): ImageStructure {
  const type = sniffImageType(bytes);
  if (!type) return { ok: false, problem: "it has no PNG, JPEG, GIF or WebP signature" };
  const checked = CHECKS[type](bytes);
  if ("problem" in checked) return { ok: false, problem: `${type} ${checked.problem}` };
  return { ok: true, type, ...checked, pixels: checked.width * checked.height };
}
