import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { imageStructure } from "../../shared/images/image-structure.ts";
import { chunk, makePng, pngDeclaring, screenshotPng } from "../support/png.ts";

/**
 * What "decodes" means at the proxy (shared/images/image-structure.ts): real images of every
 * supported format (written by Pillow into test/fixtures/images) pass with their size; the shapes
 * an attacker sends (a bare signature, bad CRCs, truncations, trailing bytes, missing parts) are
 * refused by name; no input makes the checker throw.
 */
const FIXTURES = join(import.meta.dirname, "../fixtures/images");
const fixture = (name: string) => new Uint8Array(readFileSync(join(FIXTURES, name)));
const SIG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

describe("real images pass with the size their header declares", () => {
  for (const [name, type] of [
    ["baseline.jpg", "image/jpeg"],
    ["progressive.jpg", "image/jpeg"],
    ["still.gif", "image/gif"],
    ["animated.gif", "image/gif"],
    ["lossy.webp", "image/webp"],
    ["lossless.webp", "image/webp"],
    ["alpha.webp", "image/webp"],
    ["animated.webp", "image/webp"],
    ["palette.png", "image/png"],
  ] as const) {
    it(name, () => {
      expect(imageStructure(fixture(name))).toEqual({ ok: true, type, width: 12, height: 7, pixels: 84 });
    });
  }

  it("PNGs from the test helper, and a bomb's header (well formed, 50000x50000)", () => {
    expect(imageStructure(screenshotPng(1, 64, 48))).toMatchObject({ ok: true, width: 64, height: 48 });
    expect(imageStructure(makePng(3, 2, () => [1, 2, 3]))).toMatchObject({ ok: true, pixels: 6 });
    expect(imageStructure(pngDeclaring(50_000, 50_000))).toMatchObject({ ok: true, pixels: 2_500_000_000 });
  });
});

describe("malformed images are refused by name", () => {
  const png = screenshotPng(2, 16, 16);
  const jpg = fixture("baseline.jpg");
  const gif = fixture("still.gif");
  const webp = fixture("lossy.webp");
  const cases: [string, Uint8Array, string][] = [
    ["a PNG signature and a counter (issue 49)", new Uint8Array([...SIG, 0, 0, 0, 7]), "IEND"],
    ["a PNG with a byte of IDAT changed", flip(png, 45), "CRC"],
    ["a PNG cut short", png.subarray(0, png.length - 12), "IEND"],
    ["a PNG with bytes after IEND", concat(png, [0]), "follow its IEND"],
    ["a PNG without IDAT", concat(png.subarray(0, 33), [...chunk("IEND", Buffer.alloc(0))]), "no IDAT"],
    ["a PNG starting with IEND", concat(SIG, [...chunk("IEND", Buffer.alloc(0))]), "IHDR"],
    ["a PNG declaring 0 pixels", pngDeclaring(0, 10), "0x10"],
    ["a JPEG without EOI", jpg.subarray(0, jpg.length - 2), "EOI"],
    ["a JPEG with bytes after EOI", concat(jpg, [1, 2]), "follow its EOI"],
    ["a JPEG of SOI only", new Uint8Array([0xff, 0xd8, 0xff, 0xd9]), "no frame header"],
    ["a GIF without its trailer", gif.subarray(0, gif.length - 1), "trailer"],
    ["a GIF header only", gif.subarray(0, 13), "trailer"],
    ["a WebP whose RIFF size lies", concat(webp, [0, 0]), "RIFF size"],
    ["a WebP header only", webpOf([]), "no image"],
  ];
  for (const [what, bytes, says] of cases) {
    it(what, () => {
      const out = imageStructure(bytes);
      expect(out.ok).toBe(false);
      expect(out.ok ? "" : out.problem).toContain(says);
    });
  }

  it("no mutation of a real image makes the checker throw", () => {
    let s = 12345;
    const rand = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % n;
    };
    for (const base of [png, jpg, gif, webp, fixture("animated.webp"), fixture("progressive.jpg")]) {
      for (let i = 0; i < 400; i++) {
        const b = base.slice(0, rand(base.length + 1));
        for (let k = rand(4); k > 0 && b.length > 0; k--) b[rand(b.length)] = rand(256);
        expect(() => imageStructure(b)).not.toThrow();
      }
    }
  });
});

function flip(b: Uint8Array, at: number): Uint8Array {
  const c = b.slice();
  c[at] ^= 0xff;
  return c;
}

function concat(a: ArrayLike<number>, more: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(a.length + more.length);
  out.set(a);
  out.set(more, a.length);
  return out;
}

function webpOf(chunks: number[]): Uint8Array {
  const size = 4 + chunks.length;
  return new Uint8Array([
    0x52,
    0x49,
    0x46,
    0x46,
    size & 0xff,
    size >> 8,
    0,
    0,
    0x57,
    0x45,
    0x42,
    0x50,
    ...chunks,
  ]);
}
