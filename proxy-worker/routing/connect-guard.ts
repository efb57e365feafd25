import type { lookup as dnsLookup, LookupAddress, LookupOptions } from "node:dns";
import { ADDRESS_REFUSED_CODE, addressKind, type ReplicaAddressKind } from "./replica-address.ts";

/**
 * A replica's address is checked when it is registered (replica-address.ts), but a host name is
 * resolved again for each connection: a name that gave a public address at the check and a
 * loopback or metadata one later (DNS rebinding) would be reached then. This lookup, given to the
 * Node proxy's upstream pool, classes every address a connection is about to use by the same
 * rules, so such a connection fails before a byte is sent. Literal addresses never reach a lookup
 * (the check saw them as they are); the operator's own `--upstream` hosts are not checked. Node
 * only: the Worker checks no address (docs/security.md).
 */
export type Lookup = typeof dnsLookup;

type Callback = (
  err: NodeJS.ErrnoException | null,
  address?: string | LookupAddress[],
  family?: number,
) => void;

/** A connection refused by the guard: the proxy reports it as an unreachable replica. */
export class ReplicaAddressRefused extends Error {
  readonly code = ADDRESS_REFUSED_CODE;
}

export function guardedLookup(
  lookup: Lookup,
  allow: readonly ReplicaAddressKind[],
  exemptHosts: Iterable<string>,
): Lookup {
  const allowed = new Set(allow);
  const exempt = new Set([...exemptHosts].map((h) => h.toLowerCase()));
  // node:dns lookup's overloads, as the one form this calls.
  const resolve = lookup as (h: string, o: LookupOptions, c: Callback) => void;
  const guarded = (hostname: string, options: LookupOptions | Callback, maybeCallback?: Callback) => {
    const callback = (typeof options === "function" ? options : maybeCallback) as Callback;
    const opts: LookupOptions = typeof options === "function" ? {} : (options ?? {});
    if (exempt.has(hostname.toLowerCase())) {
      resolve(hostname, opts, callback);
      return;
    }
    resolve(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return callback(err);
      const list = (addresses ?? []) as LookupAddress[];
      const refused = list.map((a) => addressKind(a.address)).find((k) => k !== null && !allowed.has(k));
      if (refused)
        return callback(
          new ReplicaAddressRefused(
            `${hostname} now resolves to a ${refused} address, which the proxy's operator has not allowed replicas at (it was checked when registered; DNS rebinding?)`,
          ),
        );
      const first = list[0];
      if (opts.all) callback(null, list);
      else if (first) callback(null, first.address, first.family);
      else callback(Object.assign(new Error(`${hostname}: no address`), { code: "ENOTFOUND" }));
    });
  };
  return guarded as unknown as Lookup;
}
