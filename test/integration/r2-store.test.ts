import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type R2BucketLike, R2Store } from "../../shared/store/r2-store.ts";
import { runStoreSuite } from "../support/store-suite.ts";

// A real R2 implementation: workerd's, through Miniflare, in memory (no persistence path).
let mf: Miniflare;
let bucket: R2BucketLike;
beforeAll(async () => {
  mf = new Miniflare({
    workers: [
      {
        config: {
          name: "r2-host",
          compatibilityDate: "2025-01-01",
          manifest: {
            mainModule: "index.js",
            modules: {
              "index.js": { type: "esm", contents: "export default { fetch() { return new Response('') } }" },
            },
          },
          env: { BUCKET: { type: "r2", name: "polar-test" } },
        },
      },
    ],
  } as ConstructorParameters<typeof Miniflare>[0]);
  bucket = (await mf.getR2Bucket("BUCKET")) as unknown as R2BucketLike;
});
afterAll(async () => {
  await mf?.dispose();
});

// Writes through Miniflare's RPC are slow (~8 ms), so pagination is shown with 40-key pages.
runStoreSuite(
  "R2Store on Miniflare",
  async () => new R2Store({ bucket, prefix: "runs/r2", name: "polar-test", pageSize: 40 }),
  { manyKeys: 150 },
);

describe("R2Store specifics", () => {
  it("keeps keys under its prefix and reports where it is", async () => {
    const a = new R2Store({ bucket, prefix: "iso/a", name: "polar-test" });
    const root = new R2Store({ bucket });
    await a.put("k.json", "a", { contentType: "application/json" });
    expect(a.url).toBe("r2://polar-test/iso/a/");
    expect(await a.list("")).toEqual(["k.json"]);
    expect(await root.list("iso/")).toEqual(["iso/a/k.json"]);
    await expect(a.get("../k.json")).rejects.toThrow(/not a valid store key/);
  });
});
