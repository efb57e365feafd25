/**
 * The image formats the proxy passes to the engine: the ones every provider API accepts
 * (Anthropic, OpenAI and Google all take PNG, JPEG, GIF and WebP) and vLLM's image loader reads.
 * Each is recognised by its file signature, so a body whose bytes are not the type it claims is
 * refused before any engine sees it.
 */
export const IMAGE_MEDIA_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

export function isImageMediaType(t: string): t is ImageMediaType {
  return (IMAGE_MEDIA_TYPES as readonly string[]).includes(t);
}

/** Names clients use for a supported type: `image/jpg` is common for JPEG. Null if unsupported. */
export function supportedImageType(t: string): ImageMediaType | null {
  const lower = t.toLowerCase();
  if (lower === "image/jpg") return "image/jpeg";
  return isImageMediaType(lower) ? lower : null;
}

const SIGNATURES: Record<ImageMediaType, (b: Uint8Array) => boolean> = {
  "image/png": (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  "image/jpeg": (b) => startsWith(b, [0xff, 0xd8, 0xff]),
  "image/gif": (b) => startsWith(b, [0x47, 0x49, 0x46, 0x38]),
  // RIFF....WEBP
  "image/webp": (b) =>
    startsWith(b, [0x52, 0x49, 0x46, 0x46]) && startsWith(b.subarray(8), [0x57, 0x45, 0x42, 0x50]),
};

/** The supported type whose signature the bytes carry, or null. */
export function sniffImageType(bytes: Uint8Array): ImageMediaType | null {
  for (const t of IMAGE_MEDIA_TYPES) if (SIGNATURES[t](bytes)) return t;
  return null;
}

function startsWith(b: Uint8Array, sig: number[]): boolean {
  if (b.length < sig.length) return false;
  return sig.every((x, i) => b[i] === x);
}
