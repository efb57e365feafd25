import { type MCP_HARNESS_TRANSPORTS, type McpServer, mcpRefusal } from "../../shared/schemas/mcp-servers.ts";
import { POLAR_ROOT } from "../runtime/bwrap.ts";

/*
 * `agent.mcp_servers` in each CLI's own MCP configuration format. The formats, as the pinned
 * releases read them (checked in the installed packages under the harness cache):
 *   - Claude Code 2.1.330: `--mcp-config <file>` with `{"mcpServers": {name: {type: "stdio",
 *     command, args, env} | {type: "sse" | "http", url, headers}}}` (the config schema in the
 *     binary, `@anthropic-ai/claude-code-linux-x64/claude`; "http" is its streamable-http).
 *   - Codex 0.169.0: config.toml `[mcp_servers.<name>]` with `command`, `args`, `env` or `url`,
 *     `http_headers` (`codex_config::mcp_types` in the binary); no SSE transport.
 *   - Gemini CLI 0.61.0 and Qwen Code 0.24.4 (its fork): settings.json `mcpServers.<name>` with
 *     `command`, `args`, `env` (stdio), `url` (SSE) or `httpUrl` (streamable HTTP), `headers`,
 *     `trust` (bundle/docs/reference/configuration.md; qwen's bundled/qc-helper/docs/features/mcp.md).
 *   - OpenCode 1.18.33: opencode.json `mcp.<name>` = `{type: "local", command: [argv...],
 *     environment}` or `{type: "remote", url, headers, oauth}`; a remote server is tried as
 *     streamable HTTP, then SSE (its MCP client in the binary).
 * Every server is started (stdio) or reached (http) by the harness inside the session's sandbox.
 */

type Servers = readonly McpServer[];

/** Throws when the harness cannot take `servers` (validation refused it already; this guards a direct call). */
function check(harness: keyof typeof MCP_HARNESS_TRANSPORTS, servers: Servers): void {
  const refusal = mcpRefusal(harness, servers);
  if (refusal) throw new Error(`agent.mcp_servers: ${refusal}`);
}

/**
 * `{{polar_root}}` in a stdio server's command, args and env values becomes the checkout root, as
 * in a `shell` command, so a task can start a server shipped under examples/ (bwrap binds it
 * read-only). Unquoted: each is one argv element or value, never a shell line.
 */
function rooted(server: McpServer): McpServer {
  if (server.transport !== "stdio") return server;
  const fill = (text: string) => text.replace(/\{\{\s*polar_root\s*\}\}/g, POLAR_ROOT);
  return {
    ...server,
    command: server.command === undefined ? undefined : fill(server.command),
    args: server.args.map(fill),
    env: Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, fill(v)])),
  };
}

function byName<T>(servers: Servers, entry: (server: McpServer) => T): Record<string, T> {
  return Object.fromEntries(servers.map((server) => [server.name, entry(rooted(server))]));
}

function headersOf(server: McpServer): { headers?: Record<string, string> } {
  return Object.keys(server.headers).length ? { headers: server.headers } : {};
}

/** The `--mcp-config` file of Claude Code. */
export function claudeMcpConfig(servers: Servers): { mcpServers: Record<string, unknown> } {
  check("claude_code", servers);
  return {
    mcpServers: byName(servers, (s) =>
      s.transport === "stdio"
        ? { type: "stdio", command: s.command, args: s.args, env: s.env }
        : { type: s.transport === "sse" ? "sse" : "http", url: s.url, ...headersOf(s) },
    ),
  };
}

/** The `mcp_servers` table of Codex's config.toml. */
export function codexMcpServers(servers: Servers): Record<string, unknown> {
  check("codex", servers);
  return byName(servers, (s) =>
    s.transport === "stdio"
      ? { command: s.command, args: s.args, env: s.env }
      : { url: s.url, ...(Object.keys(s.headers).length ? { http_headers: s.headers } : {}) },
  );
}

/** The `mcpServers` object of Gemini CLI's and Qwen Code's settings.json (the same format). */
export function geminiMcpServers(
  harness: "gemini_cli" | "qwen_code",
  servers: Servers,
): Record<string, unknown> {
  check(harness, servers);
  return byName(servers, (s) => {
    // A headless run cannot answer a confirmation prompt; the sandbox is the boundary.
    const common = { trust: true };
    if (s.transport === "stdio") return { command: s.command, args: s.args, env: s.env, ...common };
    const url = s.transport === "sse" ? { url: s.url } : { httpUrl: s.url };
    return { ...url, ...headersOf(s), ...common };
  });
}

/** The `mcp` object of opencode.json. */
export function opencodeMcp(servers: Servers): Record<string, unknown> {
  check("opencode", servers);
  return byName(servers, (s) =>
    s.transport === "stdio"
      ? { type: "local", command: [s.command, ...s.args], environment: s.env, enabled: true }
      : // oauth: false: no OAuth discovery or browser flow against the server.
        { type: "remote", url: s.url, ...headersOf(s), oauth: false, enabled: true },
  );
}
