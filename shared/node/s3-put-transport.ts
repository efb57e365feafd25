import { Agent } from "undici";
import type { PutTransport } from "../store/s3-fast-put.ts";

/**
 * The fast PUT's transport on Node: undici's `request` over its own keep-alive pool, without
 * fetch's per-call Request/Response and stream objects.
 */
export function undiciPutTransport(connections = 64): PutTransport {
  const agent = new Agent({ connections, keepAliveTimeout: 30_000 });
  return async (url, init) => {
    const { origin, pathname, search } = new URL(url);
    const res = await agent.request({
      origin,
      path: pathname + search,
      method: "PUT",
      headers: init.headers,
      body: init.body,
      signal: init.signal,
    });
    return { status: res.statusCode, text: () => res.body.text() };
  };
}
