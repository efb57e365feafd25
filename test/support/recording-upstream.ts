import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { answerOneToken } from "./fake-upstream.ts";

export interface RecordingUpstream {
  url: string;
  /** The JSON bodies of the chat calls received, in order. */
  bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

/** A vLLM-shaped upstream on 127.0.0.1 that keeps every chat body and answers one token ("ok"). */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const bodies: Record<string, unknown>[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      if (req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"object":"list","data":[{"id":"m","max_model_len":32768}]}');
        return;
      }
      if (!req.url?.startsWith("/v1/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end('{"detail":"Not Found"}');
        return;
      }
      bodies.push(JSON.parse(Buffer.concat(parts).toString("utf8")));
      answerOneToken(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
