import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { DEFAULT_STORE_DIR, openStore, StoreSpecError } from "../../shared/node/open-store.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { runStoreSuite } from "../support/store-suite.ts";

let root = "";
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-dirstore-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

runStoreSuite("DirectoryStore", async () => new DirectoryStore(root));

describe("DirectoryStore specifics", () => {
  it("refuses keys that could leave the root or that a filesystem cannot hold", async () => {
    const store = new DirectoryStore(join(root, "guarded"));
    for (const bad of [
      "",
      "/etc/passwd",
      "../x",
      "a/../../x",
      "a/./b",
      "a//b",
      "a/",
      "a\\b",
      "a\0b",
      ".polar-tmp-1",
    ]) {
      await expect(store.put(bad, "x"), JSON.stringify(bad)).rejects.toThrow(
        /not a valid store key|reserved/,
      );
      await expect(store.get(bad), JSON.stringify(bad)).rejects.toThrow(/not a valid store key|reserved/);
    }
    await expect(store.list("../")).rejects.toThrow(/prefix/);
    expect(await readdir(root)).not.toContain("x");
  });

  it("leaves no temp files behind and lists none in flight", async () => {
    const dir = join(root, "tidy");
    const store = new DirectoryStore(dir);
    await store.put("a/b.json", "1");
    expect(await store.putIfAbsent("a/b.json", "2")).toBe(false);
    expect(await store.putIfAbsent("a/c.json", "3")).toBe(true);
    expect(await readdir(join(dir, "a"))).toEqual(["b.json", "c.json"]);
    // A writer that died mid-write leaves a temp file; it is not a key.
    await writeFile(join(dir, "a", ".polar-tmp-deadbeef"), "partial");
    expect(await store.list("")).toEqual(["a/b.json", "a/c.json"]);
  });

  it("explains a key that is also a prefix of other keys", async () => {
    const store = new DirectoryStore(join(root, "conflict"));
    await store.put("a/b", "1");
    await expect(store.put("a", "2")).rejects.toThrow(/both an object and a prefix/);
    await expect(store.putIfAbsent("a", "2")).rejects.toThrow(/both an object and a prefix/);
    await expect(store.put("a/b/c", "3")).rejects.toThrow(/both an object and a prefix/);
    expect(await store.get("a")).toBeNull();
  });

  it("reports its location as a file URL", () => {
    expect(new DirectoryStore("/tmp/polar store").url).toBe("file:///tmp/polar%20store");
  });
});

describe("openStore", () => {
  it("maps every --store form to its backend", async () => {
    const byDefault = openStore(undefined);
    expect(byDefault).toBeInstanceOf(DirectoryStore);
    expect((byDefault as DirectoryStore).root).toBe(resolve(DEFAULT_STORE_DIR));
    expect((openStore("some/dir") as DirectoryStore).root).toBe(resolve("some/dir"));
    const fromUrl = openStore(`file://${root}/via-url`);
    await fromUrl.put("k", "v");
    expect(await new DirectoryStore(join(root, "via-url")).get("k")).toEqual(new TextEncoder().encode("v"));
    expect(openStore("memory://")).toBeInstanceOf(MemoryStore);
    const s3 = openStore("s3://my-bucket/runs/7", { AWS_REGION: "eu-west-1" });
    expect(s3.url).toBe("s3://my-bucket/runs/7/");
    expect(s3.capabilities.atomicPutIfAbsent).toBe(true);
    expect(() => openStore("s3://my-bucket/a/../b")).toThrow(/not a valid store key/);
    expect(openStore("s3://my-bucket").url).toBe("s3://my-bucket/");
  });

  it("explains a form it does not know", () => {
    expect(() => openStore("gs://bucket/x")).toThrow(StoreSpecError);
    expect(() => openStore("gs://bucket/x")).toThrow(/s3:\/\/bucket\/prefix/);
    expect(() => openStore("s3:///no-bucket")).toThrow(/expected s3:\/\/bucket/);
    expect(() => openStore("file://remote-host/x")).toThrow(/file URL/);
  });
});
