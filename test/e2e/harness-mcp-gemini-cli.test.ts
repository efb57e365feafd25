import { describeMcpE2E, NOTE_ARGS } from "./harness-mcp.ts";

// Gemini CLI offers MCP tools directly, as `mcp_<server>_<tool>`.
describeMcpE2E("gemini_cli", [`mcp_notes_write_note ${JSON.stringify(NOTE_ARGS)}`]);
