/**
 * One behavioural suite every ObjectStore backend must pass, so the backends stay
 * interchangeable. Usage: `runStoreSuite("DirectoryStore", async () => new DirectoryStore(dir))`
 * (optionally a third argument, `StoreSuiteOptions`).
 * `makeStore` is called once per test; each test works under its own fresh key prefix, so a
 * backend may share one bucket or directory across tests.
 */
import { describe, expect, it } from "vitest";
import type { ObjectStore } from "../../shared/store/object-store.ts";

export interface StoreSuiteOptions {
  /** Keys for the multi-page listing test (default 1,500: S3 pages hold 1,000). A backend whose
   * writes are slow may use fewer keys together with a smaller page size of its own. */
  manyKeys?: number;
}

export function runStoreSuite(
  name: string,
  makeStore: () => Promise<ObjectStore>,
  opts: StoreSuiteOptions = {},
): void {
  const manyKeys = opts.manyKeys ?? 1500;
  let counter = 0;
  // Each test gets a fresh prefix, so leftovers of one test never satisfy another's assertions.
  const fresh = () => `suite-${Date.now().toString(36)}-${counter++}/`;
  const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

  describe(`ObjectStore: ${name}`, () => {
    it("round-trips bytes and strings, and returns copies", async () => {
      const store = await makeStore();
      const p = fresh();
      const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
      await store.put(`${p}bin`, bytes);
      await store.put(`${p}text.json`, '{"héllo":"wörld ✓"}', { contentType: "application/json" });
      expect(await store.get(`${p}bin`)).toEqual(bytes);
      expect(text(await store.get(`${p}text.json`))).toBe('{"héllo":"wörld ✓"}');
      const got = await store.get(`${p}bin`);
      if (got) got[0] = 99;
      expect((await store.get(`${p}bin`))?.[0]).toBe(0);
      await store.put(`${p}empty`, new Uint8Array(0));
      expect(await store.get(`${p}empty`)).toEqual(new Uint8Array(0));
    });

    it("returns null for a missing key, also under a missing prefix", async () => {
      const store = await makeStore();
      const p = fresh();
      expect(await store.get(`${p}nope`)).toBeNull();
      expect(await store.get(`${p}no/such/dir/key.json`)).toBeNull();
    });

    it("overwrites with put", async () => {
      const store = await makeStore();
      const key = `${fresh()}k`;
      await store.put(key, "first, longer value");
      await store.put(key, "second");
      expect(text(await store.get(key))).toBe("second");
    });

    it("putIfAbsent writes once, then refuses without changing the object", async () => {
      const store = await makeStore();
      const key = `${fresh()}shard.parquet`;
      expect(await store.putIfAbsent(key, "winner")).toBe(true);
      expect(await store.putIfAbsent(key, "loser")).toBe(false);
      expect(text(await store.get(key))).toBe("winner");
    });

    it("lets exactly one of several concurrent putIfAbsent calls win", async () => {
      const store = await makeStore();
      const key = `${fresh()}race`;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => store.putIfAbsent(key, `writer-${i}`)),
      );
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      const stored = text(await store.get(key));
      if (store.capabilities.atomicPutIfAbsent) {
        expect(winners).toHaveLength(1);
        expect(stored).toBe(`writer-${winners[0]}`);
      } else {
        expect(winners.map((i) => `writer-${i}`)).toContain(stored);
      }
    });

    it("lists keys under a prefix in byte order, across nested prefixes, prefix included", async () => {
      const store = await makeStore();
      const p = fresh();
      const keys = [
        `${p}captures/t1/s2/01B.json.gz`,
        `${p}captures/t1/s1/01A.json.gz`,
        `${p}captures/t1/s1/01C.json.gz`,
        `${p}captures/t10/s1/01A.json.gz`,
        `${p}captures/t1-x/s1/a.json.gz`,
        `${p}tasks/t1.json`,
        `${p}Z-upper`,
      ];
      for (const key of keys) await store.put(key, key);
      const byteOrder = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect(await store.list(p)).toEqual(byteOrder);
      expect(await store.list(`${p}captures/t1/`)).toEqual([
        `${p}captures/t1/s1/01A.json.gz`,
        `${p}captures/t1/s1/01C.json.gz`,
        `${p}captures/t1/s2/01B.json.gz`,
      ]);
      // A prefix that ends inside a segment matches like a string prefix, as in S3.
      expect(await store.list(`${p}captures/t1`)).toEqual(
        byteOrder.filter((k) => k.startsWith(`${p}captures/t1`)),
      );
      expect(await store.list(`${p}captures/t1/s1/01C`)).toEqual([`${p}captures/t1/s1/01C.json.gz`]);
    });

    it("lists nothing for an empty or missing prefix", async () => {
      const store = await makeStore();
      const p = fresh();
      expect(await store.list(p)).toEqual([]);
      expect(await store.list(`${p}deeper/still/`)).toEqual([]);
    });

    it("deletes idempotently", async () => {
      const store = await makeStore();
      const p = fresh();
      await store.put(`${p}a`, "a");
      await store.put(`${p}b`, "b");
      await store.delete(`${p}a`);
      await store.delete(`${p}a`);
      await store.delete(`${p}never/existed`);
      expect(await store.get(`${p}a`)).toBeNull();
      expect(await store.list(p)).toEqual([`${p}b`]);
      expect(await store.putIfAbsent(`${p}a`, "again")).toBe(true);
    });

    it("stores a 10 MB object intact", async () => {
      const store = await makeStore();
      const key = `${fresh()}big.bin`;
      const big = new Uint8Array(10 * 1024 * 1024);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 0xff;
      big[big.length - 1] = 7;
      await store.put(key, big);
      const got = await store.get(key);
      expect(got?.length).toBe(big.length);
      expect(Buffer.compare(Buffer.from(got ?? []), Buffer.from(big))).toBe(0);
    });

    it(`lists ${manyKeys} keys across pages`, async () => {
      const store = await makeStore();
      const p = fresh();
      const keys = Array.from({ length: manyKeys }, (_, i) => `${p}many/${String(i).padStart(4, "0")}.json`);
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, "x")));
      }
      const listed = await store.list(`${p}many/`);
      expect(listed.length).toBe(manyKeys);
      expect(listed).toEqual(keys);
    });

    it("handles keys with dots, dashes and underscores", async () => {
      const store = await makeStore();
      const p = fresh();
      const keys = [
        `${p}a.b-c_d/e.f.json.gz`,
        `${p}a.b-c_d/e_f`,
        `${p}a.b-c_d/e-f`,
        `${p}a_b/.hidden`,
        `${p}x..y`,
      ];
      for (const key of keys) await store.put(key, key);
      for (const key of keys) expect(text(await store.get(key))).toBe(key);
      expect(await store.list(p)).toEqual([...keys].sort());
    });

    it("orders non-ASCII keys by UTF-8 bytes, as S3 does (not by UTF-16 code units)", async () => {
      const store = await makeStore();
      const p = fresh();
      // UTF-16 puts the emoji (surrogate D83D) before U+FF5E; UTF-8 bytes put it after (F0 > EF).
      const keys = [`${p}\u{1F600}.json`, `${p}\uFF5E.json`, `${p}\u00E9.json`, `${p}z.json`];
      for (const key of keys) await store.put(key, key);
      expect(await store.list(p)).toEqual([
        `${p}z.json`,
        `${p}\u00E9.json`,
        `${p}\uFF5E.json`,
        `${p}\u{1F600}.json`,
      ]);
      expect(text(await store.get(keys[0]))).toBe(keys[0]);
    });
  });
}
