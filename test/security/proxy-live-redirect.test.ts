import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { openEngineStream } from "../../proxy-worker/stream/engine-stream.ts";

// The attack: an engine address behind a gateway (or a compromised one) answers a live stream's
// request with a redirect to another host. Following it would send the session's prompt there.
// Non-streamed calls were already covered (proxy-upstream-errors.test.ts); this is the live path
// over fetch, the one Workers take.

const init = { method: "POST" as const, headers: {}, signal: new AbortController().signal };

describe("live streams over fetch do not follow an engine's redirect", () => {
  it("reports an engine's redirect instead of following it to wherever it points", async () => {
    let elsewhereHits = 0;
    const elsewhere = await listen((_req, res) => {
      elsewhereHits++;
      res.writeHead(200, { "content-type": "text/event-stream" }).end("data: [DONE]\n\n");
    });
    const engine = await listen((_req, res) =>
      res.writeHead(302, { location: `${elsewhere.url}/v1/chat/completions` }).end(),
    );
    try {
      const answer = await openEngineStream(
        { baseUrl: engine.url, fetch: globalThis.fetch },
        `${engine.url}/v1/chat/completions`,
        { ...init, body: "{}" },
      );
      expect(answer.status).toBe(302);
      expect(elsewhereHits).toBe(0);
    } finally {
      engine.server.close();
      elsewhere.server.close();
    }
  });
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
