import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../shared/node/open-store.ts";
import { S3Store, s3ClientFromEnv } from "../../shared/store/s3-store.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { runStoreSuite } from "../support/store-suite.ts";

let s3: RunningS3rver;
let legacy: RunningS3rver;
beforeAll(async () => {
  [s3, legacy] = await Promise.all([startS3rver(), startS3rver({ conditionalWrites: "not-implemented" })]);
});
afterAll(async () => {
  await Promise.all([s3?.stop(), legacy?.stop()]);
});

runStoreSuite(
  "S3Store on s3rver",
  async () => new S3Store({ bucket: s3.bucket, prefix: "runs/a", client: s3.client }),
);

describe("S3Store specifics", () => {
  it("keeps keys under its prefix and strips it when listing", async () => {
    const a = new S3Store({ bucket: s3.bucket, prefix: "iso/one", client: s3.client });
    const b = new S3Store({ bucket: s3.bucket, prefix: "iso/one-more/", client: s3.client });
    await a.put("k.json", "a");
    await b.put("k.json", "b");
    expect(a.url).toBe(`s3://${s3.bucket}/iso/one/`);
    expect(await a.list("")).toEqual(["k.json"]);
    expect(await b.list("")).toEqual(["k.json"]);
    const root = new S3Store({ bucket: s3.bucket, client: s3.client });
    expect(await root.list("iso/")).toEqual(["iso/one-more/k.json", "iso/one/k.json"]);
  });

  it("uses conditional PUT where the server has it, and falls back once where it answers 501", async () => {
    const atomic = new S3Store({ bucket: s3.bucket, client: s3.client });
    expect(await atomic.putIfAbsent("cap/x", "1")).toBe(true);
    expect(await atomic.putIfAbsent("cap/x", "2")).toBe(false);
    expect(atomic.capabilities.atomicPutIfAbsent).toBe(true);

    const fallback = new S3Store({ bucket: legacy.bucket, client: legacy.client });
    expect(fallback.capabilities.atomicPutIfAbsent).toBe(true);
    expect(await fallback.putIfAbsent("cap/x", "1")).toBe(true);
    expect(fallback.capabilities.atomicPutIfAbsent).toBe(false);
    expect(await fallback.putIfAbsent("cap/x", "2")).toBe(false);
    expect(new TextDecoder().decode((await fallback.get("cap/x")) ?? new Uint8Array())).toBe("1");
    // Not atomic any more, but every call still answers and one of the winners' bodies is stored.
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => fallback.putIfAbsent("cap/y", `w${i}`)),
    );
    expect(results).toContain(true);
    const stored = new TextDecoder().decode((await fallback.get("cap/y")) ?? new Uint8Array());
    expect(results.flatMap((won, i) => (won ? [`w${i}`] : []))).toContain(stored);
  });

  it("surfaces a missing bucket as an error instead of an empty result", async () => {
    const store = new S3Store({ bucket: "no-such-bucket", client: s3.client });
    await expect(store.get("k")).rejects.toThrow(/NoSuchBucket/);
    await expect(store.list("")).rejects.toThrow(/NoSuchBucket/);
    await expect(store.put("k", "v")).rejects.toThrow(/NoSuchBucket/);
  });

  it("surfaces a server error as an error, never a silent loss", async () => {
    const down = await startS3rver();
    const store = new S3Store({
      bucket: down.bucket,
      client: s3ClientFromEnv(down.env, { maxAttempts: 1 }),
    });
    await down.stop();
    await expect(store.put("k", "v")).rejects.toThrow(/PUT s3:\/\/polar-test\/k failed/);
    await expect(store.get("k")).rejects.toThrow(/GET/);
  });

  it("throws on a 5xx after the SDK's retries, for every operation", async () => {
    // A real HTTP server that is "down for maintenance": every request gets 500 InternalError.
    let requests = 0;
    const broken = createServer((req, res) => {
      requests++;
      req.resume();
      req.on("end", () => {
        res.writeHead(500, { "content-type": "application/xml" });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>busy</Message></Error>',
        );
      });
    });
    await new Promise<void>((resolve) => broken.listen(0, "127.0.0.1", resolve));
    const { port } = broken.address() as AddressInfo;
    try {
      const env = { ...s3.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}` };
      const store = new S3Store({ bucket: "b", client: s3ClientFromEnv(env, { maxAttempts: 2 }) });
      await expect(store.put("k", "v")).rejects.toThrow(/PUT s3:\/\/b\/k failed: InternalError \(HTTP 500\)/);
      await expect(store.putIfAbsent("k", "v")).rejects.toThrow(/HTTP 500/);
      await expect(store.get("k")).rejects.toThrow(/GET .*HTTP 500/);
      await expect(store.list("")).rejects.toThrow(/LIST .*HTTP 500/);
      await expect(store.delete("k")).rejects.toThrow(/DELETE .*HTTP 500/);
      expect(requests).toBe(10);
    } finally {
      broken.close();
    }
  });

  it("builds a working client from the standard AWS variables", async () => {
    const client = s3ClientFromEnv(s3.env);
    await client.send(new CreateBucketCommand({ Bucket: "from-env" }));
    const store = new S3Store({ bucket: "from-env", client });
    await store.put("a/b.txt", "hello");
    expect(await store.list("a/")).toEqual(["a/b.txt"]);
    expect(await client.config.forcePathStyle).toBe(true);
    expect(await client.config.region()).toBe("us-east-1");
    expect(await client.config.requestChecksumCalculation()).toBe("WHEN_REQUIRED");
    client.destroy();
  });

  it("is what openStore gives for s3://bucket/prefix", async () => {
    const store = openStore(`s3://${s3.bucket}/opened/run-1`, s3.env);
    await store.put("tasks/t1.json", "{}");
    expect(await store.putIfAbsent("tasks/t1.json", "{}")).toBe(false);
    expect(await new S3Store({ bucket: s3.bucket, client: s3.client }).list("opened/")).toEqual([
      "opened/run-1/tasks/t1.json",
    ]);
  });
});
