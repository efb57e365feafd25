import { lookup as dnsLookup } from "node:dns";
import { lookup as lookupAll } from "node:dns/promises";
import type { Server as HttpServer } from "node:http";
import type { AddressInfo, Server } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { Agent, fetch as undiciFetch } from "undici";
import { capConnections, defaultConnectionCap } from "../shared/node/connection-cap.ts";
import { closeSilentConnections, FIRST_REQUEST_MS } from "../shared/node/first-request-deadline.ts";
import { gzipPartsSync } from "../shared/node/gzip-parts.ts";
import { openStore } from "../shared/node/open-store.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { createProxyApp } from "./app.ts";
import type { ProxyDeps } from "./deps.ts";
import { guardedLookup, type Lookup } from "./routing/connect-guard.ts";
import { startProbes } from "./routing/probes.ts";
import { ReplicaSet, type RoutingOptions } from "./routing/replicas.ts";
import type { SendInit, StreamedAnswer, Upstream } from "./upstream.ts";

export interface NodeProxyOptions extends Omit<ProxyDeps, "upstream" | "store"> {
  /** Inference server root, e.g. `http://127.0.0.1:8000`. */
  upstreamUrl: string;
  /** More replicas of the same model (data parallel), routed per `routing`; see docs/routing.md. */
  upstreamUrls?: string[];
  routing?: RoutingOptions & { probeIntervalMs?: number };
  upstreamTimeoutMs?: number;
  /** Max pooled connections per upstream origin. Default 256. */
  upstreamConnections?: number;
  /** A store, or a spec for `openStore`: a directory, `file:///abs` or `s3://bucket/prefix`. */
  store: ObjectStore | string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8787; 0 picks a free port. */
  port?: number;
  /** Client connections open at once (past it, closed on accept). Default: `defaultConnectionCap()`. */
  maxConnections?: number;
  /** Deadlines on client connections; each one not given keeps `CONNECTION_TIMEOUTS`. */
  connectionTimeouts?: Partial<ConnectionTimeouts>;
  /** How upstream host names resolve for each connection (default node:dns `lookup`); tests give their own. */
  lookup?: Lookup;
}

/** How long a client connection may take at each stage before the server closes it. */
export interface ConnectionTimeouts {
  /**
   * A request's headers, whole, counted from the connection's accept (its first request) or from
   * its first byte (later ones): a connection that sends nothing, or stalls in its headers, is
   * closed within this (plus `checkMs`), before any credential is read.
   */
  headersMs: number;
  /** A request's body, whole: a backstop behind the app's own body deadlines (limits.ts), which answer first. */
  requestMs: number;
  /**
   * An idle connection between requests. Longer than any client keeps one idle for reuse (httpx 5 s,
   * undici 4 s, aiohttp 15 s): Node's default (5 s) let a client reuse a connection the server was
   * closing, and under load the reused call failed with ECONNRESET ("Connection error"; docs/proxy.md).
   */
  keepAliveMs: number;
  /** How often Node checks the headers and request deadlines. */
  checkMs: number;
}

export const CONNECTION_TIMEOUTS: ConnectionTimeouts = {
  headersMs: FIRST_REQUEST_MS,
  requestMs: 120_000,
  keepAliveMs: 65_000,
  checkMs: 1_000,
};

/** @hono/node-server hands each request's IncomingMessage in as `env.incoming`. */
function socketPeer(_request: Request, env: unknown): string | null {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? null;
}

export interface RunningProxy {
  url: string;
  port: number;
  app: Hono;
  store: ObjectStore;
  close(): Promise<void>;
}

/** Every address `host` resolves to. */
async function resolveAll(host: string): Promise<string[]> {
  return (await lookupAll(host, { all: true })).map((a) => a.address);
}

/** The gateway on Node: @hono/node-server in front, a keep-alive undici pool behind. */
export async function startNodeProxy(opts: NodeProxyOptions): Promise<RunningProxy> {
  const {
    upstreamUrl,
    upstreamUrls,
    routing,
    upstreamTimeoutMs,
    upstreamConnections,
    host = "127.0.0.1",
    port = 8787,
    maxConnections = defaultConnectionCap(),
    connectionTimeouts,
    lookup,
    ...rest
  } = opts;
  const store = typeof opts.store === "string" ? openStore(opts.store) : opts.store;
  // Timeouts are enforced per call by the app (AbortSignal), so the pool must not cut long generations.
  const urls = [upstreamUrl, ...(upstreamUrls ?? [])];
  // Where the control API checks replica addresses, every connection's resolved address is
  // checked again (connect-guard.ts: a name rebound after its check is not reached).
  const allow = rest.control?.replicaAddresses?.allow;
  const exempt = urls.map((u) => new URL(u).hostname);
  const connectLookup = allow ? guardedLookup(lookup ?? dnsLookup, allow, exempt) : lookup;
  const agent = new Agent({
    connections: upstreamConnections ?? 256,
    keepAliveTimeout: 30_000,
    headersTimeout: 0,
    bodyTimeout: 0,
    ...(connectLookup ? { connect: { lookup: connectLookup } } : {}),
  });
  const pooledFetch = ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input as string, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch;
  // undici's own request API: the same pool, without fetch's per-call Request/Response/streams.
  const request = (url: string, init: SendInit) => {
    const { origin, pathname, search } = new URL(url);
    return agent.request({
      origin,
      path: pathname + search,
      method: init.method,
      headers: init.headers,
      body: init.body,
      signal: init.signal,
    });
  };
  const send = async (url: string, init: SendInit) => {
    const res = await request(url, init);
    return { status: res.statusCode, text: await res.body.text() };
  };
  // The same for live streams: the body as a Node stream pushing text ('data' events), not fetch's
  // WHATWG stream read one promise per engine chunk.
  const stream = async (url: string, init: SendInit): Promise<StreamedAnswer> => {
    const res = await request(url, init);
    const { body } = res;
    const type = res.headers["content-type"];
    return {
      status: res.statusCode,
      contentType: Array.isArray(type) ? type.join(", ") : (type ?? ""),
      text: () => body.text(),
      read(sink) {
        body.setEncoding("utf8");
        body.on("data", (text: string) => sink.data(text));
        body.on("end", () => sink.end());
        body.on("error", (err) => sink.error(err));
      },
    };
  };
  const upstreamOf = (baseUrl: string): Upstream => ({
    baseUrl,
    fetch: pooledFetch,
    send,
    stream,
    timeoutMs: upstreamTimeoutMs,
  });
  const replicas = new ReplicaSet(urls.map(upstreamOf), routing, rest.clock);
  // One process: the control API may change the replica set in its memory (docs/control-api.md),
  // so a replica registered there is probed like a configured one.
  const control = rest.control && {
    runtimeState: true,
    ...rest.control,
    // A host name is classed by what it resolves to (a name for 127.0.0.1 is a loopback address).
    replicaAddresses: { resolve: resolveAll, ...rest.control.replicaAddresses },
  };
  const stopProbes =
    urls.length > 1 || control?.runtimeState ? startProbes(replicas, routing?.probeIntervalMs) : () => {};
  const app = createProxyApp({
    ...rest,
    control,
    store,
    // node:zlib at level 1 without web streams: CompressionStream (level 6) was ~2.4 ms a capture.
    gzip: rest.gzip ?? ((parts) => gzipPartsSync(parts)),
    closeOnUnreadBody: rest.closeOnUnreadBody ?? true,
    clientAddress: rest.clientAddress ?? socketPeer,
    upstream: upstreamOf(upstreamUrl),
    replicas,
  });
  const t = { ...CONNECTION_TIMEOUTS, ...connectionTimeouts };
  const serverOptions = {
    headersTimeout: t.headersMs,
    // Node refuses a request deadline under the headers one; the app's body deadline answers first.
    requestTimeout: Math.max(t.requestMs, t.headersMs, (rest.limits?.bodyTimeoutMs ?? 0) + 10_000),
    keepAliveTimeout: t.keepAliveMs,
    connectionsCheckingInterval: t.checkMs,
  };
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port, serverOptions }, () => resolve(s));
    s.once("error", reject);
  });
  capConnections(server as Server, maxConnections, rest.log);
  closeSilentConnections(server as HttpServer, t.headersMs);
  const address = server.address() as AddressInfo;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    app,
    store,
    async close() {
      stopProbes();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await agent.close();
    },
  };
}
