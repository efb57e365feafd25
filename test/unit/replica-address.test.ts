import { describe, expect, it } from "vitest";
import {
  addressKind,
  parseAddressKinds,
  refusedAddress,
} from "../../proxy-worker/routing/replica-address.ts";

describe("replica address classes", () => {
  it("classes every spelling of loopback, link-local and metadata a URL can carry", () => {
    const host = (url: string) => addressKind(new URL(url).hostname);
    expect(host("http://127.0.0.1:8000")).toBe("loopback");
    expect(host("http://127.1.2.3")).toBe("loopback");
    // The URL parser normalises decimal, hex and short forms to dotted quads.
    expect(host("http://2130706433/")).toBe("loopback");
    expect(host("http://0x7f.1/")).toBe("loopback");
    expect(host("http://0.0.0.0:80")).toBe("loopback");
    expect(host("http://[::1]:8000")).toBe("loopback");
    expect(host("http://[::]:8000")).toBe("loopback");
    expect(host("http://[::ffff:127.0.0.1]/")).toBe("loopback");
    expect(host("http://LOCALHOST./")).toBe("loopback");
    expect(host("http://engine.localhost/")).toBe("loopback");
    expect(host("http://169.254.1.2/")).toBe("link-local");
    expect(host("http://[fe80::1]/")).toBe("link-local");
    expect(host("http://[febf::1]/")).toBe("link-local");
    expect(host("http://169.254.169.254/latest/meta-data/")).toBe("metadata");
    expect(host("http://[::ffff:169.254.169.254]/")).toBe("metadata");
    expect(host("http://[fd00:ec2::254]/")).toBe("metadata");
    expect(host("http://metadata.google.internal/")).toBe("metadata");
    expect(host("http://100.100.100.200/")).toBe("metadata");
    for (const open of [
      "http://10.0.0.5:8000",
      "http://192.168.1.9",
      "http://[2001:db8::1]",
      "http://gpu-3:8000",
    ])
      expect(host(open), open).toBeNull();
  });

  it("refuses a class not allowed, classes a host name by what it resolves to, and checks nothing without a policy", async () => {
    const resolve = async (h: string) => (h === "sneaky.example" ? ["10.0.0.1", "127.0.0.1"] : ["10.0.0.2"]);
    expect(await refusedAddress("http://127.0.0.1:1", { allow: [] })).toMatch(/^loopback address/);
    expect(await refusedAddress("http://127.0.0.1:1", { allow: ["loopback"] })).toBeNull();
    expect(await refusedAddress("http://169.254.169.254", { allow: ["loopback", "link-local"] })).toMatch(
      /^metadata address.*--allow-replica-addresses metadata/,
    );
    expect(await refusedAddress("http://sneaky.example:8000", { allow: [], resolve })).toMatch(/^loopback/);
    expect(await refusedAddress("http://gpu-3:8000", { allow: [], resolve })).toBeNull();
    const failing = async () => {
      throw new Error("ENOTFOUND");
    };
    expect(await refusedAddress("http://nowhere.invalid", { allow: [], resolve: failing })).toBeNull();
    expect(await refusedAddress("http://127.0.0.1:1", {})).toBeNull();
  });

  it("parses the flag", () => {
    expect(parseAddressKinds("loopback,metadata")).toEqual(["loopback", "metadata"]);
    expect(parseAddressKinds("none")).toEqual([]);
    expect(parseAddressKinds("loopback,private")).toMatch(/unknown address kind "private"/);
  });
});
