/**
 * Which replica addresses the control API may add. A control-token holder registering
 * `http://169.254.169.254` or `http://127.0.0.1:6379` would make the proxy send requests there
 * (the probe, then model calls): the proxy's own host and its cloud metadata service are reached
 * only where the operator allowed them (issue 49). The operator's own `--upstream` replicas are
 * never checked. Web APIs only: the Worker's control API uses it too.
 */

/** The error code of a connection the Node proxy refused because its address is one of these (connect-guard.ts). */
export const ADDRESS_REFUSED_CODE = "EREPLICAADDRESS";

/** Address classes a replica needs the operator's allowance for. */
export const REPLICA_ADDRESS_KINDS = ["loopback", "link-local", "metadata"] as const;
export type ReplicaAddressKind = (typeof REPLICA_ADDRESS_KINDS)[number];

export interface ReplicaAddressPolicy {
  /**
   * Classes the operator allows (`--allow-replica-addresses`). Absent: no address is checked, the
   * embedding code's choice; `polar proxy` passes none, `polar serve` loopback.
   */
  allow?: readonly ReplicaAddressKind[];
  /** A host name's addresses (Node: DNS); without it only literal addresses and known names are classed. */
  resolve?: (host: string) => Promise<string[]>;
}

/** Cloud metadata services: AWS/GCP/Azure/OCI (and the ECS/EKS agents), Alibaba, AWS over IPv6. */
const METADATA_V4 = new Set(["169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200"]);
const METADATA_V6 = new Set(["fd00:ec2:0:0:0:0:0:254"]);
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
]);

function v4Kind(addr: string): ReplicaAddressKind | null {
  const parts = addr.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return null;
  if (METADATA_V4.has(parts.join("."))) return "metadata";
  const [a, b] = parts as [number, number];
  // 0.0.0.0/8 reaches this host's own listeners on Linux, like 127/8.
  if (a === 127 || a === 0) return "loopback";
  if (a === 169 && b === 254) return "link-local";
  return null;
}

/** The 8 groups of an IPv6 address, lower case, without leading zeros; null if it is not one. */
function v6Groups(addr: string): string[] | null {
  let text = addr.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const octets = (dotted[1] as string).split(".").map(Number);
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    text = `${text.slice(0, dotted.index)}${hex(octets[0] as number, octets[1] as number)}:${hex(octets[2] as number, octets[3] as number)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0) return null;
  const groups = [...head, ...Array(fill).fill("0"), ...tail];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => Number.parseInt(g, 16).toString(16));
}

function v6Kind(addr: string): ReplicaAddressKind | null {
  const g = v6Groups(addr);
  if (!g) return null;
  const joined = g.join(":");
  if (METADATA_V6.has(joined)) return "metadata";
  if (joined === "0:0:0:0:0:0:0:1" || joined === "0:0:0:0:0:0:0:0") return "loopback";
  // ::ffff:a.b.c.d is the IPv4 address a.b.c.d.
  if (g.slice(0, 5).every((x) => x === "0") && g[5] === "ffff") {
    const n = (Number.parseInt(g[6] as string, 16) << 16) | Number.parseInt(g[7] as string, 16);
    return v4Kind([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join("."));
  }
  if ((Number.parseInt(g[0] as string, 16) & 0xffc0) === 0xfe80) return "link-local";
  return null;
}

/** The class of a host (a URL's `hostname`: IPv6 in brackets) needing allowance, or null. */
export function addressKind(host: string): ReplicaAddressKind | null {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  if (h.includes(":")) return v6Kind(h);
  if (/^[\d.]+$/.test(h)) return v4Kind(h);
  if (h === "localhost" || h.endsWith(".localhost")) return "loopback";
  if (METADATA_NAMES.has(h)) return "metadata";
  return null;
}

/**
 * Why `url` may not be added under `policy`, or null. A host name is classed by every address it
 * resolves to; one that does not resolve is left to the probe (which then finds it unreachable).
 * The Node proxy classes the addresses of every connection again (connect-guard.ts), so a name
 * rebound after this check is not reached.
 */
export async function refusedAddress(url: string, policy: ReplicaAddressPolicy): Promise<string | null> {
  if (!policy.allow) return null;
  const allow = new Set(policy.allow);
  const host = new URL(url).hostname;
  const kinds = new Set<ReplicaAddressKind>();
  const own = addressKind(host);
  if (own) kinds.add(own);
  else if (policy.resolve && !/^[\d.]+$/.test(host) && !host.startsWith("[")) {
    const addresses = await policy.resolve(host).catch(() => [] as string[]);
    for (const a of addresses) {
      const kind = addressKind(a);
      if (kind) kinds.add(kind);
    }
  }
  const refused = [...kinds].find((k) => !allow.has(k));
  if (!refused) return null;
  return `${refused} address: the proxy's operator has not allowed replicas there (polar proxy --allow-replica-addresses ${refused})`;
}

/** `--allow-replica-addresses`: a comma-separated list of kinds, or `none`; a string says what is wrong. */
export function parseAddressKinds(spec: string): ReplicaAddressKind[] | string {
  if (spec.trim() === "none") return [];
  const kinds = spec.split(",").map((s) => s.trim());
  const bad = kinds.find((k) => !(REPLICA_ADDRESS_KINDS as readonly string[]).includes(k));
  if (bad !== undefined)
    return `unknown address kind "${bad}": use ${REPLICA_ADDRESS_KINDS.join(", ")} (comma-separated) or none`;
  return [...new Set(kinds)] as ReplicaAddressKind[];
}
