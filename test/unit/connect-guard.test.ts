import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import {
  guardedLookup,
  type Lookup,
  ReplicaAddressRefused,
} from "../../proxy-worker/routing/connect-guard.ts";

/** A resolver answering from a table, in both of node:dns lookup's callback forms. */
function table(answers: Record<string, LookupAddress[]>): Lookup {
  return ((host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const list = answers[host];
    if (!list) return callback(Object.assign(new Error(`${host}: not found`), { code: "ENOTFOUND" }));
    const [first] = list;
    return options.all ? callback(null, list) : callback(null, first?.address, first?.family);
  }) as unknown as Lookup;
}

const answers: Record<string, LookupAddress[]> = {
  "public.test": [{ address: "203.0.113.7", family: 4 }],
  "mixed.test": [
    { address: "203.0.113.7", family: 4 },
    { address: "::ffff:127.0.0.1", family: 6 },
  ],
  "meta.test": [{ address: "169.254.169.254", family: 4 }],
  "engine.test": [{ address: "127.0.0.1", family: 4 }],
};

function resolve(lookup: Lookup, host: string, all: boolean): Promise<unknown> {
  return new Promise((ok, fail) =>
    (lookup as unknown as (h: string, o: object, c: (...a: unknown[]) => void) => void)(
      host,
      { all },
      (err, address, family) => (err ? fail(err) : ok(all ? address : [address, family])),
    ),
  );
}

describe("the Node proxy's connect-time address check", () => {
  const guarded = guardedLookup(table(answers), ["loopback"], ["ENGINE.test"]);

  it("passes a public name through, in both callback forms", async () => {
    expect(await resolve(guarded, "public.test", false)).toEqual(["203.0.113.7", 4]);
    expect(await resolve(guarded, "public.test", true)).toEqual(answers["public.test"]);
  });

  it("refuses a name any of whose addresses is of a kind not allowed, naming it", async () => {
    const err = (await resolve(guarded, "meta.test", false).catch((e) => e)) as ReplicaAddressRefused;
    expect(err).toBeInstanceOf(ReplicaAddressRefused);
    expect(err.code).toBe("EREPLICAADDRESS");
    expect(err.message).toMatch(/^meta\.test now resolves to a metadata address/);
    const strict = guardedLookup(table(answers), [], []);
    expect(await resolve(strict, "mixed.test", true).catch((e) => e)).toBeInstanceOf(ReplicaAddressRefused);
  });

  it("lets an allowed kind through, and the operator's own hosts whatever they resolve to", async () => {
    expect(await resolve(guarded, "mixed.test", true)).toEqual(answers["mixed.test"]);
    const strict = guardedLookup(table(answers), [], ["engine.test"]);
    expect(await resolve(strict, "engine.test", false)).toEqual(["127.0.0.1", 4]);
  });

  it("passes the resolver's own failure on", async () => {
    const err = (await resolve(guarded, "missing.test", false).catch((e) => e)) as { code?: string };
    expect(err.code).toBe("ENOTFOUND");
  });
});
