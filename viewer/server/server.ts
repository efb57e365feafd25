import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { qwen3ChatTokenIds } from "../../shared/node/qwen3/chat-segments.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { createViewerApp } from "./app.ts";
import type { TokenDecoder } from "./trace-payload.ts";

export interface ViewerServer {
  url: string;
  close(): Promise<void>;
}

/** The Qwen3 tokenizer the project ships, as the viewer uses it. */
export async function qwen3Decoder(): Promise<TokenDecoder> {
  const { loadQwen3 } = await import("../../shared/node/qwen3/qwen3.ts");
  const q = loadQwen3();
  return { tokenBytes: (id) => q.tokenBytes(id), chatIds: qwen3ChatTokenIds(q), standalone: new Map() };
}

/** Serves the viewer on `host` (127.0.0.1 unless told otherwise); port 0 picks a free one. */
export async function startViewer(
  store: ObjectStore,
  opts: { host?: string; port?: number } = {},
): Promise<ViewerServer> {
  const host = opts.host ?? "127.0.0.1";
  const decoder = await qwen3Decoder();
  const app = createViewerApp({ store, decoder: () => decoder });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: opts.port ?? 0 }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
