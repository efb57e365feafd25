import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { capConnections, defaultConnectionCap } from "../shared/node/connection-cap.ts";
import { closeSilentConnections, FIRST_REQUEST_MS } from "../shared/node/first-request-deadline.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { storeKeyProblem } from "../shared/store/store-key.ts";

/**
 * What S3 presigned URLs are for a bucket, for a local directory store: a small HTTP server on
 * 127.0.0.1 that serves a store key only with an unexpired HMAC signature minted by `presignGet`.
 * `polar serve` hands it to the control API, so `GET /v1/tasks/{id}/trajectories` gives URLs a
 * trainer can download from, exactly as with an S3 store.
 */
export interface LocalDownloads {
  url: string;
  presignGet(key: string, expiresSeconds: number): Promise<string>;
  close(): Promise<void>;
}

export async function startLocalDownloads(
  store: ObjectStore,
  host = "127.0.0.1",
  clock: () => number = Date.now,
  firstRequestMs = FIRST_REQUEST_MS,
): Promise<LocalDownloads> {
  const secret = randomBytes(32);
  const sign = (key: string, exp: string) =>
    createHmac("sha256", secret).update(`${key}\n${exp}`).digest("hex");
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://local");
      const key = decodeURIComponent(url.pathname.slice(1));
      const exp = url.searchParams.get("exp") ?? "";
      const sig = Buffer.from(url.searchParams.get("sig") ?? "", "utf8");
      const want = Buffer.from(sign(key, exp), "utf8");
      const valid =
        req.method === "GET" &&
        storeKeyProblem(key) === null &&
        sig.length === want.length &&
        timingSafeEqual(sig, want) &&
        Number(exp) * 1000 > clock();
      if (!valid) {
        res.writeHead(403, { "content-type": "text/plain" }).end("bad or expired signature\n");
        return;
      }
      const bytes = await store.get(key);
      if (!bytes) {
        res.writeHead(404, { "content-type": "text/plain" }).end(`no ${key}\n`);
        return;
      }
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.byteLength });
      res.end(bytes);
    })().catch((err) => {
      res.writeHead(500, { "content-type": "text/plain" }).end(`${(err as Error).message}\n`);
    });
  });
  // A trainer's downloads: held to a bounded number of connections, each sending its request in time.
  server.headersTimeout = firstRequestMs;
  capConnections(server, defaultConnectionCap());
  closeSilentConnections(server, firstRequestMs);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    async presignGet(key, expiresSeconds) {
      const exp = String(Math.floor(clock() / 1000) + expiresSeconds);
      return `${base}/${key.split("/").map(encodeURIComponent).join("/")}?exp=${exp}&sig=${sign(key, exp)}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
