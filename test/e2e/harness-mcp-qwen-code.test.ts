import { describeMcpE2E, NOTE_ARGS } from "./harness-mcp.ts";

// Qwen Code defers MCP tools: tool_search shows the schema, tool_call invokes the hidden tool.
describeMcpE2E("qwen_code", [
  `tool_search ${JSON.stringify({ query: "select:mcp__notes__write_note", max_results: 1 })}`,
  `tool_call ${JSON.stringify({ name: "mcp__notes__write_note", arguments: NOTE_ARGS })}`,
]);
