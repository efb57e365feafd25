import { describe, expect, it } from "vitest";
import { decodeCapture, encodeCapture } from "../../shared/capture-codec.ts";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import {
  engineImages,
  externalizeImages,
  ImageBlobMissingError,
  ImageRefError,
  imagePlaceholder,
  restoreImages,
  sha256Hex,
} from "../../shared/images/image-refs.ts";
import { screenshotPng } from "../support/png.ts";
import { capture } from "../support/reconstruction-captures.ts";

const A = screenshotPng(11);
const B = screenshotPng(12);
const url = (b: Uint8Array, type = "image/png") => `data:${type};base64,${bytesToBase64(b)}`;

function withImages() {
  const request = {
    model: "m",
    messages: [
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: bytesToBase64(A) } },
          { type: "image", source: { type: "base64", media_type: "image/png", data: bytesToBase64(B) } },
          { type: "image", source: { type: "base64", media_type: "image/png", data: bytesToBase64(A) } },
        ],
      },
    ],
  };
  const chat_request = {
    model: "m",
    messages: [
      {
        role: "user",
        content: [A, B, A].map((b) => ({ type: "image_url", image_url: { url: url(b) } })),
      },
    ],
  };
  return { ...capture([1, 2], [3]), request, chat_request };
}

describe("images kept once", () => {
  it("one blob per distinct image, placeholders in both bodies, exact restore through the codec", async () => {
    const rec = withImages();
    const { record, blobs } = await externalizeImages(rec);
    expect(blobs.map((b) => b.sha256)).toEqual([await sha256Hex(A), await sha256Hex(B)]);
    expect(engineImages(record).map((r) => r.sha256)).toEqual([
      await sha256Hex(A),
      await sha256Hex(B),
      await sha256Hex(A),
    ]);
    expect(record.image_refs?.filter((r) => r.field === "request").map((r) => r.form)).toEqual([
      "base64",
      "base64",
      "base64",
    ]);
    const text = JSON.stringify(record);
    expect(text).not.toContain(bytesToBase64(A).slice(0, 100));
    expect(text).toContain(imagePlaceholder(await sha256Hex(B)));
    const stored = await decodeCapture(await encodeCapture(record));
    const get = async (h: string) => blobs.find((b) => b.sha256 === h)?.bytes ?? null;
    const back = await restoreImages(stored, get);
    expect(back.request).toEqual(rec.request);
    expect(back.chat_request).toEqual(rec.chat_request);
  });

  it("keeps each data URL's own label, leaves one with parameters inline; text-only records untouched", async () => {
    const rec = withImages();
    const withParams = `data:image/png;name=a.png;base64,${bytesToBase64(A)}`;
    (rec.request.messages[0].content as unknown[]).push({ v: url(A, "image/jpg") }, { v: withParams });
    const { record, blobs } = await externalizeImages(rec);
    expect(JSON.stringify(record.request)).toContain(withParams);
    expect(JSON.stringify(record.request)).not.toContain(url(A, "image/jpg"));
    const get = async (h: string) => blobs.find((b) => b.sha256 === h)?.bytes ?? null;
    expect((await restoreImages(record, get)).request).toEqual(rec.request);
    const plain = capture([1], [2]);
    const out = await externalizeImages(plain);
    expect(out.record).toBe(plain);
    expect(out.blobs).toEqual([]);
  });

  it("a missing blob, or a ref path that leads elsewhere, is an error; no prototype is reached", async () => {
    const { record } = await externalizeImages(withImages());
    await expect(restoreImages(record, async () => null)).rejects.toThrow(ImageBlobMissingError);
    const hostile = {
      ...record,
      image_refs: [
        {
          ...(record.image_refs?.[0] as NonNullable<typeof record.image_refs>[0]),
          path: ["__proto__", "polluted"],
        },
      ],
    };
    await expect(restoreImages(hostile, async () => A)).rejects.toThrow(ImageRefError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
