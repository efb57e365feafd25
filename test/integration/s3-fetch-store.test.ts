import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3FetchStore } from "../../shared/store/s3-fetch-store.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { runStoreSuite } from "../support/store-suite.ts";

// The fetch + SigV4 S3 backend the Worker uses, held to the same ObjectStore suite as the SDK one.
let s3: RunningS3rver;
let legacy: RunningS3rver;
beforeAll(async () => {
  [s3, legacy] = await Promise.all([startS3rver(), startS3rver({ conditionalWrites: "not-implemented" })]);
});
afterAll(async () => {
  await Promise.all([s3?.stop(), legacy?.stop()]);
});

const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const on = (server: RunningS3rver, prefix: string, pageSize?: number) =>
  new S3FetchStore({ bucket: server.bucket, prefix, endpoint: server.endpoint, credentials, pageSize });

// Pagination is shown with 40-key pages: 1,500 single PUTs would dominate the suite's time.
runStoreSuite("S3FetchStore on s3rver", async () => on(s3, "runs/fetch", 40), { manyKeys: 150 });

describe("S3FetchStore specifics", () => {
  it("falls back to HEAD + PUT once where conditional PUT answers 501, and says so", async () => {
    const store = on(legacy, "legacy");
    expect(await store.putIfAbsent("k", "1")).toBe(true);
    expect(store.capabilities.atomicPutIfAbsent).toBe(false);
    expect(await store.putIfAbsent("k", "2")).toBe(false);
    expect(new TextDecoder().decode((await store.get("k")) as Uint8Array)).toBe("1");
  });

  it("handles keys that need escaping, in paths and in listings", async () => {
    const store = on(s3, "esc");
    const key = "a b/c&d+e=f'g\"h<i>.json";
    await store.put(key, "x");
    expect(await store.list("a b/")).toEqual([key]);
    expect(await store.get(key)).toEqual(new TextEncoder().encode("x"));
    await store.delete(key);
    expect(await store.get(key)).toBeNull();
  });

  it("surfaces a missing bucket instead of reading it as a missing key", async () => {
    const store = new S3FetchStore({ bucket: "no-such-bucket", endpoint: s3.endpoint, credentials });
    await expect(store.get("k")).rejects.toThrow(/NoSuchBucket/);
    await expect(store.list("")).rejects.toThrow(/no-such-bucket|NoSuchBucket/);
  });
});
