#!/usr/bin/env node
/*
 * A minimal MCP server with one tool, `write_note {path, text}`, that writes a file relative to the
 * server's working dir (the session's work dir when a harness starts it). No dependencies, so a task
 * can run it in any sandbox that has node (docs/harnesses.md "MCP servers"):
 *   stdio (default): newline-delimited JSON-RPC 2.0 on stdin/stdout;
 *     `{"name": "notes", "transport": "stdio", "command": "node", "args": ["<this file>"]}`
 *   --http PORT [--host H] [--dir D]: streamable HTTP at /mcp (each answer a JSON body) and the
 *     older SSE transport at /sse (+ /messages), e.g. as a side service of the session;
 *     `{"name": "notes", "transport": "streamable-http", "url": "http://H:PORT/mcp"}`.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { createInterface } from "node:readline";

const TOOL = {
  name: "write_note",
  description: "Write text to a file in the working directory.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the working directory." },
      text: { type: "string", description: "The file's content." },
    },
    required: ["path", "text"],
  },
};

const flags = process.argv.slice(2);
function flag(name) {
  const at = flags.indexOf(name);
  return at >= 0 ? flags[at + 1] : undefined;
}
/** Where notes land: --dir, else the working dir. */
const ROOT = resolve(flag("--dir") ?? process.cwd());

function writeNote(args) {
  const path = typeof args?.path === "string" ? args.path : "";
  const text = typeof args?.text === "string" ? args.text : null;
  const root = ROOT;
  const target = resolve(root, path);
  const inside = relative(root, target);
  // The tool writes inside its working dir only: no absolute paths, no way out with "..".
  if (!path || text === null || isAbsolute(path) || inside.startsWith("..") || inside === "") {
    return {
      isError: true,
      content: [{ type: "text", text: "write_note needs a relative path and a text" }],
    };
  }
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
  return { content: [{ type: "text", text: `wrote ${inside} (${Buffer.byteLength(text)} bytes)` }] };
}

function answer(request) {
  switch (request.method) {
    case "initialize":
      return {
        protocolVersion: request.params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "polar-note-server", version: "1.0.0" },
      };
    case "ping":
      return {};
    case "tools/list":
      return { tools: [TOOL] };
    case "tools/call":
      if (request.params?.name !== TOOL.name) return { error: { code: -32602, message: "unknown tool" } };
      return writeNote(request.params.arguments);
    default:
      return { error: { code: -32601, message: `method not found: ${request.method}` } };
  }
}

/** The JSON-RPC answer to one message (null for a notification, which gets none). */
function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } };
  }
  // Notifications (no id) need no answer; `notifications/initialized` is one.
  if (request?.id === undefined || request.id === null) return null;
  const result = answer(request);
  return result.error
    ? { jsonrpc: "2.0", id: request.id, error: result.error }
    : { jsonrpc: "2.0", id: request.id, result };
}

function readBody(req) {
  return new Promise((done) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => done(body));
  });
}

/** Open /sse streams by session id: the SSE transport posts to /messages and is answered here. */
const streams = new Map();

async function serveHttp(req, res) {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname === "/mcp" && req.method === "POST") {
    const reply = handle(await readBody(req));
    if (!reply) return res.writeHead(202).end();
    return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
  }
  if (url.pathname === "/sse" && req.method === "GET") {
    const id = randomUUID();
    streams.set(id, res);
    res.on("close", () => streams.delete(id));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    return res.write(`event: endpoint\ndata: /messages?sessionId=${id}\n\n`);
  }
  if (url.pathname === "/messages" && req.method === "POST") {
    const stream = streams.get(url.searchParams.get("sessionId") ?? "");
    if (!stream) return res.writeHead(404).end("unknown session");
    const reply = handle(await readBody(req));
    res.writeHead(202).end("Accepted");
    if (reply) stream.write(`event: message\ndata: ${JSON.stringify(reply)}\n\n`);
    return;
  }
  // No server-initiated stream on /mcp (GET) and no session to end (DELETE): 405, as the spec allows.
  res.writeHead(url.pathname === "/mcp" ? 405 : 404).end();
}

const port = flag("--http");
if (port !== undefined) {
  const server = createServer((req, res) => {
    serveHttp(req, res).catch(() => res.writeHead(500).end());
  });
  server.listen(Number(port), flag("--host") ?? "127.0.0.1", () => {
    // The bound port on stdout, so a caller that asked for port 0 learns it.
    process.stdout.write(`listening ${server.address().port}\n`);
  });
} else {
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (!line.trim()) return;
    const reply = handle(line);
    if (reply) process.stdout.write(`${JSON.stringify(reply)}\n`);
  });
}
