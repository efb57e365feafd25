import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ShardRow } from "../batch-runner/shards/shard-rows.ts";
import { sha256Hex } from "../shared/images/image-refs.ts";
import { type ImageMediaType, sniffImageType } from "../shared/images/image-types.ts";
import { keys } from "../shared/keys.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";

/** One image of a session's traces, in engine order within its trace. */
export interface AtifImage {
  trace_index: number;
  sha256: string;
  /** Set once the file is written: relative to the trajectory's JSON (`images/{sha256}.{ext}`). */
  path?: string;
  media_type?: ImageMediaType;
}

const EXTENSION: Record<ImageMediaType, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
};

/** The images of a session's rows (trace order, then engine order), as `extra.polar.images` lists them. */
export function imagesOfRows(rows: readonly ShardRow[]): AtifImage[] {
  return rows.flatMap((r) =>
    (r.image_hashes ?? []).map((sha256) => ({ trace_index: r.trace_index, sha256 })),
  );
}

export class ImageExportError extends Error {}

/**
 * Copies each distinct image out of the store to `{outDir}/images/{sha256}.{ext}` and fills in
 * `path` and `media_type`. Throws ImageExportError naming the key of an image that is missing, is
 * not an image, or does not hash to its name.
 */
export async function writeAtifImages(
  images: AtifImage[],
  store: ObjectStore,
  outDir: string,
): Promise<number> {
  const written = new Map<string, { path: string; media_type: ImageMediaType }>();
  for (const image of images) {
    let file = written.get(image.sha256);
    if (!file) {
      const key = keys.imageBlob(image.sha256);
      const bytes = await store.get(key);
      if (!bytes) throw new ImageExportError(`image ${key} is not in the store ${store.url}`);
      const type = sniffImageType(bytes);
      if (!type) throw new ImageExportError(`${key} in ${store.url} is not a PNG, JPEG, GIF or WebP image`);
      if ((await sha256Hex(bytes)) !== image.sha256)
        throw new ImageExportError(`${key} in ${store.url} does not hash to its name`);
      file = { path: `images/${image.sha256}.${EXTENSION[type]}`, media_type: type };
      await mkdir(join(outDir, "images"), { recursive: true });
      await writeFile(join(outDir, file.path), bytes);
      written.set(image.sha256, file);
    }
    Object.assign(image, file);
  }
  return written.size;
}
