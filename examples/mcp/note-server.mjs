#!/usr/bin/env node
/*
 * A minimal MCP server over stdio (newline-delimited JSON-RPC 2.0, the MCP stdio transport), with
 * one tool, `write_note {path, text}`, that writes a file relative to the server's working dir (the
 * session's work dir when a harness starts it). No dependencies, so a task can run it in any
 * sandbox that has node: `agent.mcp_servers: [{"name": "notes", "transport": "stdio",
 * "command": "node", "args": ["<this file>"]}]` (docs/harnesses.md "MCP servers").
 */
import { mkdirSync, writeFileSync } from "node:fs";
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

function send(message) {
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
}

function writeNote(args) {
  const path = typeof args?.path === "string" ? args.path : "";
  const text = typeof args?.text === "string" ? args.text : null;
  const root = process.cwd();
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

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    send({ id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  // Notifications (no id) need no answer; `notifications/initialized` is one.
  if (request?.id === undefined || request.id === null) return;
  const result = answer(request);
  if (result.error) send({ id: request.id, error: result.error });
  else send({ id: request.id, result });
});
