// The limit: a bare forwarder that pipes request and response bytes to the upstream through an
// undici Pool, parsing nothing. `node bench/support/pass-through.ts UPSTREAM_URL [port] [--discard]`.
// With --discard it only reads the upstream's answer to its end and answers the byte count: the cost
// of taking a stream off the socket, with no write per chunk.
import { createServer } from "node:http";
import { Pool } from "undici";

const upstream = new URL(process.argv[2]);
const discard = process.argv[4] === "--discard";
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1 });

const server = createServer(async (req, res) => {
  try {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === "string" && k !== "host" && k !== "connection") headers[k] = v;
    }
    const up = await pool.request({
      method: req.method as "POST",
      path: req.url ?? "/",
      headers,
      body: req.method === "GET" ? undefined : req,
    });
    const outHeaders: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(up.headers)) {
      if (v !== undefined && k !== "connection" && k !== "keep-alive") outHeaders[k] = v;
    }
    if (discard) {
      let bytes = 0;
      for await (const c of up.body) bytes += (c as Buffer).length;
      res.writeHead(up.statusCode, { "content-type": "application/json" });
      res.end(JSON.stringify({ bytes }));
      return;
    }
    res.writeHead(up.statusCode, outHeaders);
    for await (const c of up.body) res.write(c);
    res.end();
  } catch (err) {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(err));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[3] ?? 0), "127.0.0.1", () => {
  const addr = server.address();
  console.log(`listening ${typeof addr === "object" && addr ? addr.port : 0}`);
});
