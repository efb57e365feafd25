import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { type RunningProxy, startNodeProxy } from "../../proxy-worker/node.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";
import { oneSessionCall } from "../support/proxy.ts";

// An engine with no `GET /health` (NeMo RL's vLLM server, `vllm_worker_async.py` at 7ea279ab:
// a FastAPI app with `POST /v1/chat/completions` and `POST /tokenize` only) is registered, routed
// to and health-checked through `POST /tokenize`; an address that is no engine is still refused,
// and an engine whose /health fails for any other reason than 404 is refused as before.
const KEY = "replica-without-health-key";
const CONTROL = "replica-without-health-token";

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | Promise<void>;

interface Server {
  url: string;
  /** `METHOD /path` -> requests received. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

async function serve(handle: Handler): Promise<Server> {
  const hits = new Map<string, number>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const route = `${req.method} ${req.url}`;
    hits.set(route, (hits.get(route) ?? 0) + 1);
    await handle(req, Buffer.concat(chunks), res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * What NeMo RL's server answers, by behaviour: its two POST routes (sampled by the dry-run policy),
 * FastAPI's own docs routes, 405 for another method on a route it has, 404 for everything else.
 */
function nemoRlShaped(policy: PolicyServer): Handler {
  const posts = new Set(["/v1/chat/completions", "/tokenize"]);
  const gets = new Set(["/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"]);
  return async (req, body, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (posts.has(path) && req.method === "POST") {
      const answer = await fetch(`${policy.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body.toString("utf8"),
      });
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "" });
      res.end(Buffer.from(await answer.arrayBuffer()));
      return;
    }
    if (gets.has(path) && req.method === "GET") return json(res, 200, { openapi: "3.1.0", paths: {} });
    if (posts.has(path) || gets.has(path)) return json(res, 405, { detail: "Method Not Allowed" });
    return json(res, 404, { detail: "Not Found" });
  };
}

let policy: PolicyServer;
let nemoRl: Server;
let proxy: RunningProxy;
const store = new MemoryStore();
const PROBE_MS = 100;

beforeAll(async () => {
  policy = await startPolicy();
  nemoRl = await serve(nemoRlShaped(policy));
  proxy = await startNodeProxy({
    upstreamUrl: policy.url,
    store,
    port: 0,
    signingKey: KEY,
    log: () => {},
    routing: { probeIntervalMs: PROBE_MS },
    control: { jobs: new MemoryQueue(), controlToken: CONTROL },
  });
});
afterAll(async () => {
  await proxy?.close();
  await nemoRl?.close();
  await policy?.close();
});

interface Listed {
  url: string;
  healthy: boolean;
}

async function control(method: string, body?: unknown) {
  const res = await fetch(`${proxy.url}/v1/replicas`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CONTROL}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { replicas: Listed[]; added?: string[]; error?: { message: string } },
  };
}

const listed = async () => (await control("GET")).body.replicas;

async function oneCall() {
  const call = await oneSessionCall(proxy.url, store, KEY, "no-health");
  expect(call.status).toBe(200);
  return call.capture as CaptureRecord;
}

async function until(check: () => Promise<boolean>, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe("an engine that serves no GET /health (NeMo RL's vLLM server)", () => {
  it("is accepted, vetted through POST /tokenize", async () => {
    const res = await control("PUT", { urls: [`${nemoRl.url}/v1`] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.added).toEqual([`${nemoRl.url}/v1`]);
    expect(nemoRl.hits.get("GET /health")).toBeGreaterThanOrEqual(1);
    expect(nemoRl.hits.get("POST /tokenize")).toBeGreaterThanOrEqual(1);
  });

  it("is routed to", async () => {
    policy.resetCounts();
    for (let i = 0; i < 3; i++) expect((await oneCall()).replica).toBe(`${nemoRl.url}/v1`);
    expect(nemoRl.hits.get("POST /v1/chat/completions")).toBe(3);
  });

  it("stays healthy through the routine probes, and is drained once it stops answering", async () => {
    const before = nemoRl.hits.get("POST /tokenize") ?? 0;
    // Several probe rounds: each one asks /tokenize, and each keeps it healthy.
    expect(await until(async () => (nemoRl.hits.get("POST /tokenize") ?? 0) >= before + 3)).toBe(true);
    expect((await listed()).map((r) => [r.url, r.healthy])).toEqual([[`${nemoRl.url}/v1`, true]]);
    // With a second engine in the set, the drained one takes no new session.
    const other = await startPolicy();
    try {
      expect((await control("PUT", { urls: [`${nemoRl.url}/v1`, other.url] })).status).toBe(200);
      await nemoRl.close();
      const drained = async () =>
        (await listed()).find((r) => r.url === `${nemoRl.url}/v1`)?.healthy === false;
      expect(await until(drained)).toBe(true);
      for (let i = 0; i < 3; i++) expect((await oneCall()).replica).toBe(other.url);
    } finally {
      await control("PUT", { urls: [policy.url] });
      await other.close();
    }
  });
});

describe("an address that is no engine", () => {
  const cases: [string, Handler][] = [
    ["answers 404 to everything", (_req, _body, res) => json(res, 404, { detail: "Not Found" })],
    [
      "answers /tokenize with JSON that holds no token ids",
      (req, _body, res) =>
        req.url === "/tokenize" ? json(res, 200, { ok: true }) : json(res, 404, { detail: "Not Found" }),
    ],
    [
      "answers 404 to /health and a page to anything else",
      (req, _body, res) => {
        res.writeHead(req.url === "/health" ? 404 : 200, { "content-type": "text/html" });
        res.end("<html>hello</html>");
      },
    ],
    [
      // The address was vetted, not where it points: a probe that followed this would pass on the
      // engine's answer and register a replica whose calls go to the redirector.
      "redirects /health to an engine",
      (req, _body, res) => {
        res.writeHead(302, { location: `${policy.url}${req.url}` });
        res.end();
      },
    ],
    [
      "redirects /tokenize to an engine",
      (req, _body, res) => {
        if (req.url !== "/tokenize") return json(res, 404, { detail: "Not Found" });
        res.writeHead(307, { location: `${policy.url}/tokenize` });
        res.end();
      },
    ],
  ];
  for (const [what, handler] of cases) {
    it(`is refused when it ${what}, and the set is kept`, async () => {
      const server = await serve(handler);
      try {
        const before = await listed();
        const res = await control("PUT", { urls: [server.url] });
        expect(res.status).toBe(422);
        expect(res.body.error?.message).toContain(`replica ${server.url} is not reachable`);
        expect(await listed()).toEqual(before);
      } finally {
        await server.close();
      }
    });
  }
});

describe("an engine whose /health fails otherwise", () => {
  it("is refused as before, and its /tokenize is not asked", async () => {
    // A vLLM still loading its weights: /health 503, while /tokenize may already answer.
    const loading = await serve(async (req, body, res) => {
      if (req.url === "/health") return json(res, 503, { detail: "loading" });
      return nemoRlShaped(policy)(req, body, res);
    });
    try {
      const res = await control("PUT", { urls: [loading.url] });
      expect(res.status).toBe(422);
      expect(loading.hits.get("GET /health")).toBe(1);
      expect(loading.hits.get("POST /tokenize")).toBeUndefined();
    } finally {
      await loading.close();
    }
  });
});
