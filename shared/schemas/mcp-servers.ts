import { z } from "zod";
import { TaskEnv } from "./reserved-env.ts";

/*
 * `agent.mcp_servers`: MCP servers the harness starts for the agent, written by the preset into the
 * CLI's own MCP configuration (batch-runner/harness/mcp-config.ts). The fields are Harbor's
 * `MCPServerConfig` (harbor/models/task/config.py, harbor 0.26) one to one, so a task.toml's
 * `[[environment.mcp_servers]]` maps straight onto it: name, transport (default "sse" as there),
 * url, command, args, headers; plus `env` for a stdio server's own variables, which Harbor lacks.
 * Harbor's "http" spelling of streamable-http is the importer's to map.
 *
 * Nothing here opens a network path: a stdio server is a child of the harness inside the sandbox;
 * an http server's URL is reached from inside the sandbox, so it must be a side service of the
 * session or a localhost server the task's prepare steps start.
 */

export const MCP_TRANSPORTS = ["stdio", "sse", "streamable-http"] as const;

const ALL_TRANSPORTS = MCP_TRANSPORTS;

/**
 * The harness presets that write MCP servers into their CLI's config, and the transports each CLI
 * speaks (batch-runner/harness/mcp-config.ts says where each format comes from). Every other preset
 * refuses a task with `agent.mcp_servers`, naming itself. test/unit/mcp-config.test.ts checks this
 * map against the presets (and its keys against HARNESSES: task.ts imports this file).
 */
export const MCP_HARNESS_TRANSPORTS: Record<string, readonly McpTransport[]> = {
  claude_code: ALL_TRANSPORTS,
  // Codex's MCP client has stdio and streamable HTTP only (no legacy SSE transport).
  codex: ["stdio", "streamable-http"],
  gemini_cli: ALL_TRANSPORTS,
  qwen_code: ALL_TRANSPORTS,
  opencode: ALL_TRANSPORTS,
};
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

/** Header names as HTTP defines a token; values one line (a newline would start another header). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const McpServer = z
  .strictObject({
    /**
     * Becomes a key of the CLI's config (a TOML table name for Codex) and part of every tool name
     * the model sees (`mcp__<name>__<tool>` in Claude Code), hence the plain alphabet.
     */
    name: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$/,
        "an MCP server name is 1-48 letters, digits, _ or -, starting with a letter or digit",
      ),
    transport: z.enum(MCP_TRANSPORTS).default("sse"),
    /** sse / streamable-http: the server's URL as seen inside the sandbox. */
    url: z.url({ protocol: /^https?$/, error: "an MCP server url is an http:// or https:// URL" }).optional(),
    /** stdio: the program the harness starts (inside the sandbox) and its arguments. */
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** stdio: extra environment of the server process (reserved names refused as in agent.env). */
    env: TaskEnv.default({}),
    /** sse / streamable-http: headers sent with every request, written as given. */
    headers: z.record(z.string(), z.string()).default({}),
  })
  .superRefine((server, ctx) => {
    const stdio = server.transport === "stdio";
    const misplaced = (field: string, message: string) =>
      ctx.addIssue({ code: "custom", path: [field], message });
    if (stdio && !server.command) misplaced("command", "required for transport 'stdio'");
    if (!stdio && !server.url) misplaced("url", `required for transport '${server.transport}'`);
    if (stdio && server.url !== undefined)
      misplaced("url", "only for the sse and streamable-http transports");
    if (!stdio && server.command !== undefined) misplaced("command", "only for transport 'stdio'");
    if (!stdio && server.args.length) misplaced("args", "only for transport 'stdio'");
    if (!stdio && Object.keys(server.env).length) misplaced("env", "only for transport 'stdio'");
    if (stdio && Object.keys(server.headers).length) misplaced("headers", "only for the HTTP transports");
    for (const [name, value] of Object.entries(server.headers)) {
      if (!HEADER_NAME.test(name)) misplaced("headers", `${JSON.stringify(name)} is not an HTTP header name`);
      if (/[\r\n]/.test(value)) misplaced("headers", `header ${JSON.stringify(name)} must be one line`);
      // Harbor's `${VAR}` references are expanded differently (or not at all) by each CLI, and the
      // runner passes no variables of its own into a session: a value is sent exactly as written.
      if (value.includes("${")) {
        misplaced(
          "headers",
          `header ${JSON.stringify(name)}: \${VAR} references are not expanded; write the value itself`,
        );
      }
    }
  });
export type McpServer = z.infer<typeof McpServer>;

export const McpServers = z
  .array(McpServer)
  .max(16)
  .superRefine((servers, ctx) => {
    const seen = new Set<string>();
    for (const [i, server] of servers.entries()) {
      // Every CLI keys its servers by name: a second one would silently replace the first.
      if (seen.has(server.name)) {
        ctx.addIssue({ code: "custom", path: [i, "name"], message: `${server.name} is named twice` });
      }
      seen.add(server.name);
    }
  });

/** Why `harness` cannot take these MCP servers, or null when its preset writes them all. */
export function mcpRefusal(
  harness: string,
  servers: readonly Pick<McpServer, "name" | "transport">[],
): string | null {
  const transports = Object.hasOwn(MCP_HARNESS_TRANSPORTS, harness) ? MCP_HARNESS_TRANSPORTS[harness] : null;
  if (!transports) {
    return (
      `harness "${harness}" cannot take MCP servers: its preset has no MCP configuration ` +
      `(presets that do: ${Object.keys(MCP_HARNESS_TRANSPORTS).join(", ")}; docs/harnesses.md "MCP servers")`
    );
  }
  const unsupported = servers.find((s) => !transports.includes(s.transport));
  if (!unsupported) return null;
  return (
    `harness "${harness}" cannot take MCP server "${unsupported.name}": its CLI has no ` +
    `${unsupported.transport} transport (it takes ${transports.join(", ")})`
  );
}
