import { describeMcpE2E, NOTE_ARGS } from "./harness-mcp.ts";

// OpenCode offers MCP tools directly, as `<server>_<tool>`.
describeMcpE2E("opencode", [`notes_write_note ${JSON.stringify(NOTE_ARGS)}`]);
