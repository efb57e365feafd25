import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { IMAGE_SESSION, IMAGE_TASK, writeImageSession } from "../support/image-session.ts";

/**
 * `polar export --format atif` of a session whose calls carried screenshots: the trajectory lists
 * its traces' images in engine order and `--out` writes each image once, read from the store the
 * shard or result sits in.
 */
const POLAR = new URL("../../bin/polar.js", import.meta.url).pathname;

function polar(...args: string[]) {
  return spawnSync(process.execPath, [POLAR, ...args], { encoding: "utf8", timeout: 120_000 });
}

describe("polar export with images", () => {
  let dir: string;
  let hashes: string[];
  let pngs: Uint8Array[];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "polar-export-images-"));
    ({ pngs } = await writeImageSession(new DirectoryStore(join(dir, "store"))));
    hashes = await Promise.all(pngs.map((p) => sha256Hex(p)));
  }, 120_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const [what, file] of [
    ["the shard", `trajectories/${IMAGE_TASK}.parquet`],
    ["the result", `results/${IMAGE_TASK}/${IMAGE_SESSION}.json`],
  ] as const) {
    it(`from ${what}: images listed in order and written once each`, () => {
      const out = join(dir, `out-${what.replace(" ", "-")}`);
      const run = polar("export", "--format", "atif", join(dir, "store", file), "--out", out, "--no-text");
      expect(run.status, run.stderr).toBe(0);
      const atif = JSON.parse(readFileSync(join(out, `${IMAGE_SESSION}.json`), "utf8"));
      const images = atif.extra.polar.images as { trace_index: number; sha256: string; path: string }[];
      expect(images.map((i) => [i.trace_index, i.sha256])).toEqual(hashes.map((h) => [0, h]));
      images.forEach((image, i) => {
        expect(image.path).toBe(`images/${hashes[i]}.png`);
        expect(new Uint8Array(readFileSync(join(out, image.path)))).toEqual(pngs[i]);
      });
    });
  }

  it("without --out the images are listed, no file written; a missing image is named", () => {
    const shard = join(dir, "store", "trajectories", `${IMAGE_TASK}.jsonl`);
    const run = polar("export", "--format", "atif", shard, "--no-text");
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).extra.polar.images.map((i: { sha256: string }) => i.sha256)).toEqual(
      hashes,
    );

    const copy = mkdtempSync(join(tmpdir(), "polar-export-missing-"));
    try {
      spawnSync("cp", ["-r", join(dir, "store"), copy]);
      unlinkSync(join(copy, "store", keys.imageBlob(hashes[1])));
      const out = join(copy, "out");
      const bad = polar(
        "export",
        "--format",
        "atif",
        join(copy, "store", "trajectories", `${IMAGE_TASK}.parquet`),
        "--out",
        out,
        "--no-text",
      );
      expect(bad.status).toBe(1);
      expect(bad.stderr).toContain(`image ${keys.imageBlob(hashes[1])} is not in the store`);
      expect(existsSync(join(copy, "store", keys.imageBlob(hashes[0])))).toBe(true);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
