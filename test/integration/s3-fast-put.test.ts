import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { undiciPutTransport } from "../../shared/node/s3-put-transport.ts";
import { baseUrlFrom, FastPut, type PutTransport } from "../../shared/store/s3-fast-put.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";
import { runStoreSuite } from "../support/store-suite.ts";

// The proxy's S3 captures go through FastPut (one signed request, no SDK middleware stack) after
// the store's first PUT has shown which URL the SDK resolves. s3rver stores what it is sent and
// the SDK reads it back; a small server re-signing with the SDK's signer checks the signatures.

let s3: RunningS3rver;
const transport = undiciPutTransport(8);
beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  await s3?.stop();
});

const fastStore = (prefix: string, t: PutTransport = transport, client = s3.client) =>
  new S3Store({ bucket: s3.bucket, prefix, client, putTransport: t });

/** Counts the transport's calls, so a test can tell the fast path from the SDK's. */
function counted(inner: PutTransport): PutTransport & { calls: string[] } {
  const calls: string[] = [];
  const t = (async (url, init) => {
    calls.push(url);
    return inner(url, init);
  }) as PutTransport & { calls: string[] };
  t.calls = calls;
  return t;
}

const SECRET = "the-secret";
/** Temporary credentials (an instance role, SSO): the token header must be sent and signed. */
const TOKEN = "session-token";
const escapeSegment = (segment: string) =>
  encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * An S3 stand-in that checks SigV4 with the SDK's own signer: it signs the request it received
 * (method, path as sent, the signed headers, the body) at the request's own x-amz-date and
 * accepts only when that gives the Authorization header the client sent. s3rver does not check
 * signatures, so this is what can tell a signed request from the one on the wire.
 */
async function verifyingServer() {
  const oracle = new S3Client({
    region: "us-east-1",
    credentials: { accessKeyId: "AKID", secretAccessKey: SECRET, sessionToken: TOKEN },
  });
  const signer = await (oracle.config as unknown as { signer(): Promise<Signer> }).signer();
  const accepted: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = new Uint8Array(Buffer.concat(chunks));
    const auth = String(req.headers.authorization ?? "");
    const names = /SignedHeaders=([^,]+)/.exec(auth)?.[1].split(";") ?? [];
    const headers = Object.fromEntries(names.map((n) => [n, String(req.headers[n] ?? "")]));
    const d = String(req.headers["x-amz-date"] ?? "");
    const date = new Date(
      `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`,
    );
    const { port } = server.address() as AddressInfo;
    // The SDK's PutObject carries `?x-id=PutObject`; the signer wants the query apart.
    const [path, search = ""] = String(req.url).split("?");
    const query = Object.fromEntries(new URLSearchParams(search));
    const resigned = await signer.sign(
      {
        method: req.method,
        protocol: "http:",
        hostname: "127.0.0.1",
        port,
        path,
        query,
        headers,
        body,
      },
      { signingDate: date, signingRegion: "us-east-1", signingService: "s3" },
    );
    const tokenSigned =
      names.includes("x-amz-security-token") && req.headers["x-amz-security-token"] === TOKEN;
    if (
      resigned.headers.authorization === auth &&
      tokenSigned &&
      Number(req.headers["content-length"]) === body.byteLength
    ) {
      accepted.push(path);
      res.writeHead(200).end();
    } else {
      res.writeHead(403, { "content-type": "application/xml" });
      res.end("<Error><Code>SignatureDoesNotMatch</Code><Message>re-signed differently</Message></Error>");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    accepted,
    close: () => {
      oracle.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Signer {
  sign(
    request: Record<string, unknown>,
    opts: { signingDate: Date; signingRegion: string; signingService: string },
  ): Promise<{ headers: Record<string, string> }>;
}

runStoreSuite("S3Store with the fast PUT on s3rver", async () => fastStore("runs/fast"));

describe("the fast PUT", () => {
  it("takes over after the first PUT, and the SDK reads back bytes and headers it wrote", async () => {
    const t = counted(transport);
    const store = fastStore("fast/a", t);
    const keys = ["first.json", "captures/t/s/0001.json.gz", "odd/a b!'()*+%é~=&.json", "odd/日本/x y.bin"];
    const bodies = keys.map((k, i) => new TextEncoder().encode(`${i}:${k}:${"x".repeat(i * 1000)}`));
    for (const [i, key] of keys.entries()) {
      await store.put(key, bodies[i], { contentType: "application/json", contentEncoding: "gzip" });
    }
    // The first went through the SDK (it names the URL); the other three were one request each.
    expect(t.calls).toHaveLength(3);
    expect(t.calls[0]).toBe(`${s3.endpoint}/${s3.bucket}/fast/a/captures/t/s/0001.json.gz`);
    const sdkOnly = new S3Store({ bucket: s3.bucket, prefix: "fast/a", client: s3.client });
    expect(await sdkOnly.list("")).toEqual([...keys].sort());
    for (const [i, key] of keys.entries()) expect(await sdkOnly.get(key)).toEqual(bodies[i]);
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `fast/a/${keys[2]}` }));
    expect(head.ContentType).toBe("application/json");
    expect(head.ContentEncoding).toBe("gzip");
    expect(head.ContentLength).toBe(bodies[2].byteLength);
  });

  it("sends exactly what it signed: a server that re-signs with the SDK's signer accepts it", async () => {
    const verifier = await verifyingServer();
    try {
      const client = new S3Client({
        endpoint: verifier.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "AKID", secretAccessKey: SECRET, sessionToken: TOKEN },
      });
      const t = counted(transport);
      const store = new S3Store({ bucket: "b", prefix: "p", client, putTransport: t });
      const keys = ["learn.json", "captures/t/s/01.json.gz", "odd/a b!'()*+%é~=&.json", "empty.bin"];
      for (const [i, key] of keys.entries()) {
        const body = new TextEncoder().encode(i === 3 ? "" : `${key}:${"y".repeat(5000 * i)}`);
        await store.put(key, body, { contentType: "application/json", contentEncoding: "gzip" });
      }
      expect(t.calls).toHaveLength(3);
      // The SDK's own first request verifies too, so the verifier is not rejecting everything.
      expect(verifier.accepted).toEqual(keys.map((k) => `/b/p/${k.split("/").map(escapeSegment).join("/")}`));

      const wrong = new S3Client({
        endpoint: verifier.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "AKID", secretAccessKey: "not-the-secret", sessionToken: TOKEN },
      });
      const put = new FastPut(wrong, `${verifier.endpoint}/b`, transport, 1);
      await expect(
        put.put("p/x.json", new Uint8Array([1]), undefined, AbortSignal.timeout(5000)),
      ).rejects.toMatchObject({ name: "SignatureDoesNotMatch", $metadata: { httpStatusCode: 403 } });
      expect(verifier.accepted).toHaveLength(keys.length);
      client.destroy();
      wrong.destroy();
    } finally {
      await verifier.close();
    }
  });

  it("retries 429 and 5xx like the SDK, then reports the last answer the way the SDK path does", async () => {
    const answers = [503, 500, 200];
    const flaky = counted(async (url, init) => {
      const status = answers.shift() ?? 500;
      if (status === 200) return transport(url, init);
      return {
        status,
        text: async () =>
          `<?xml version="1.0"?><Error><Code>${status === 503 ? "SlowDown" : "InternalError"}</Code><Message>busy</Message></Error>`,
      };
    });
    const store = fastStore("fast/retry", flaky);
    await store.put("learn.json", "1");
    await store.put("k.json", "2");
    expect(flaky.calls).toHaveLength(3);
    expect(await store.get("k.json")).toEqual(new TextEncoder().encode("2"));

    const down = counted(async () => ({
      status: 500,
      text: async () => `<Error><Code>InternalError</Code><Message>busy</Message></Error>`,
    }));
    const failing = fastStore("fast/down", down);
    await failing.put("learn.json", "1");
    await expect(failing.put("k", "v")).rejects.toThrow(
      `PUT s3://${s3.bucket}/fast/down/k failed: InternalError (HTTP 500): busy`,
    );
    // s3.client's maxAttempts (the SDK default, 3), as `client.send` would have tried.
    expect(down.calls).toHaveLength(3);
  });

  it("does not retry a 4xx, and reports an unreachable server", async () => {
    const denied = counted(async () => ({
      status: 403,
      text: async () => `<Error><Code>AccessDenied</Code><Message>no</Message></Error>`,
    }));
    const store = fastStore("fast/denied", denied);
    await store.put("learn.json", "1");
    await expect(store.put("k", "v")).rejects.toThrow(/AccessDenied \(HTTP 403\): no/);
    expect(denied.calls).toHaveLength(1);

    const refused: PutTransport = async () => {
      throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
    };
    const gone = fastStore("fast/gone", refused);
    await gone.put("learn.json", "1");
    await expect(gone.put("k", "v")).rejects.toThrow(/PUT s3:\/\/.*fast\/gone\/k failed: .*ECONNREFUSED/);
  });

  it("gives up at the store's deadline when the server never answers", async () => {
    const hang: PutTransport = (_url, init) =>
      new Promise((_resolve, reject) =>
        init.signal.addEventListener("abort", () => reject(init.signal.reason)),
      );
    const store = new S3Store({
      bucket: s3.bucket,
      prefix: "fast/hang",
      client: s3.client,
      putTransport: hang,
      timeouts: { requestMs: 300 },
    });
    await store.put("learn.json", "1");
    const started = Date.now();
    await expect(store.put("k", "v")).rejects.toThrow(/PUT s3:\/\/.*fast\/hang\/k/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("uses the URL the SDK resolved, virtual-hosted AWS addressing included", async () => {
    // No network: the SDK's request handler records what it would send and answers 200.
    const seen: { hostname: string; path: string; headers: Record<string, string> }[] = [];
    const client = new S3Client({
      region: "eu-west-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
      requestHandler: {
        handle: async (request: { hostname: string; path: string; headers: Record<string, string> }) => {
          seen.push(request);
          return { response: { statusCode: 200, headers: {}, body: undefined } };
        },
      } as never,
    });
    const sent: { url: string; headers: Record<string, string> }[] = [];
    const t: PutTransport = async (url, init) => {
      sent.push({ url, headers: init.headers });
      return { status: 200, text: async () => "" };
    };
    const store = new S3Store({ bucket: "my-bucket", prefix: "runs/x", client, putTransport: t });
    await store.put("a.json", "1");
    await store.put("b c.json", "2", { contentType: "application/json" });
    expect(seen).toHaveLength(1);
    expect(seen[0].hostname).toBe("my-bucket.s3.eu-west-1.amazonaws.com");
    expect(sent.map((s) => s.url)).toEqual([
      "https://my-bucket.s3.eu-west-1.amazonaws.com/runs/x/b%20c.json",
    ]);
    // The SDK's own PUT of the same key, for its signed header list and credential scope.
    const sdkOnly = new S3Store({ bucket: "my-bucket", prefix: "runs/x", client });
    await sdkOnly.put("b c.json", "2", { contentType: "application/json" });
    expect(seen[1].path).toBe("/runs/x/b%20c.json");
    const scope = (h: Record<string, string>) =>
      /Credential=(\S+), SignedHeaders=(\S+),/.exec(h.authorization)?.slice(1);
    const [fastCred, fastSigned] = scope(sent[0].headers) ?? [];
    const [sdkCred, sdkSigned] = scope(seen[1].headers) ?? [];
    expect(fastCred).toBe(sdkCred);
    // The SDK signs its own telemetry headers too; every header the fast path sends is signed.
    for (const name of ["content-length", "content-type", "host", "x-amz-content-sha256", "x-amz-date"]) {
      expect(fastSigned?.split(";")).toContain(name);
      expect(sdkSigned?.split(";")).toContain(name);
    }
    expect(sent[0].headers["x-amz-content-sha256"]).toBe(seen[1].headers["x-amz-content-sha256"]);

    // Every byte a key may hold (store-key.ts refuses only NUL, backslash and empty or dot
    // segments) is escaped as the SDK escapes it: AWS checks the signature over that form.
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i))
      .filter((c) => c !== "/" && c !== "\\" && c !== ".")
      .join("");
    for (const key of [`k/${printable}.json`, "k/é日本 🙂.json", "k/%2F%20+.json"]) {
      await store.put(key, "3");
      await sdkOnly.put(key, "3");
      expect(new URL(sent.at(-1)?.url ?? "").pathname).toBe(seen.at(-1)?.path);
    }
    client.destroy();
  });

  it("stays on the SDK where the path does not end in the key, or for directory buckets", () => {
    const sent = { protocol: "https:", hostname: "h", path: "/b/runs/k.json" };
    expect(baseUrlFrom(sent, "b", "runs/k.json")).toBe("https://h/b");
    expect(baseUrlFrom({ ...sent, port: 9000 }, "b", "runs/k.json")).toBe("https://h:9000/b");
    expect(baseUrlFrom(sent, "b", "runs/other.json")).toBeNull();
    expect(baseUrlFrom(sent, "b--use1-az4--x-s3", "runs/k.json")).toBeNull();
    expect(baseUrlFrom(sent, "arn:aws:s3:us-east-1:1:accesspoint/ap", "runs/k.json")).toBeNull();
  });
});
