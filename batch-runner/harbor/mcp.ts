/**
 * A Harbor task's `environment.mcp_servers` (Harbor's `MCPServerConfig`: name, transport, url,
 * command, args, headers) -> `agent.mcp_servers` (shared/schemas/mcp-servers.ts), which the harness
 * presets write into their CLI's MCP config. Harbor reads transport "http" as "streamable-http";
 * the rest is checked by Polar's schema when the task is validated (a harness without an MCP
 * config, or a `${VAR}` header, is refused there by name).
 */
export function mcpServersOf(servers: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return servers.map(({ transport, ...rest }) => ({
    ...rest,
    ...(transport === undefined ? {} : { transport: transport === "http" ? "streamable-http" : transport }),
  }));
}
