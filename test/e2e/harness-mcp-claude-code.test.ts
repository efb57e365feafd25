import { describeMcpE2E, NOTE_ARGS } from "./harness-mcp.ts";

// Claude Code defers MCP tools: the model loads the schema with ToolSearch, then calls the tool.
describeMcpE2E("claude_code", [
  `ToolSearch ${JSON.stringify({ query: "select:mcp__notes__write_note", max_results: 1 })}`,
  `mcp__notes__write_note ${JSON.stringify(NOTE_ARGS)}`,
]);
