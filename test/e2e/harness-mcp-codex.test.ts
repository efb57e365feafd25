import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpTask, NOTE_ARGS, TOOL_DESCRIPTION } from "./harness-mcp.ts";
import { type OneSession, runOneSession } from "./polar-run-process.ts";

/*
 * Codex reads `[mcp_servers.notes]` from config.toml, starts the server in the sandbox and offers
 * its tool to the model as a Responses `namespace` tool (`mcp__notes` holding `write_note`). The
 * proxy's Responses codec drops namespace tools today (proxy-worker/codecs/openai-responses/
 * convert-tools.ts keeps function, custom and local_shell tools only), so the engine never sees
 * the tool and the model cannot call it: this file checks what Codex itself does with the config.
 */
function namespaceTool(request: unknown): unknown {
  const tools = (request as { tools?: { type?: string; name?: string }[] }).tools ?? [];
  return tools.find((t) => t.type === "namespace" && t.name === "mcp__notes");
}

describe("codex: a stdio MCP server from agent.mcp_servers", () => {
  let withServer: OneSession;
  let without: OneSession;

  beforeAll(async () => {
    const calls = [`mcp__notes__write_note ${JSON.stringify(NOTE_ARGS)}`];
    withServer = await runOneSession("codex", mcpTask("codex", "e2e-mcp-codex", calls, true));
    without = await runOneSession("codex", mcpTask("codex", "e2e-mcp-codex-none", calls, false));
  }, 400_000);

  afterAll(async () => {
    await withServer?.cleanup();
    await without?.cleanup();
  });

  it("starts the server and offers its tool, as a namespace tool, in the request it sends", () => {
    expect(withServer.run.code, withServer.run.output).toBe(0);
    const offered = withServer.captures.map((c) => namespaceTool(c.request)).find(Boolean);
    expect(offered).toMatchObject({
      tools: [{ type: "function", name: "write_note", description: TOOL_DESCRIPTION }],
    });
  });

  it("without agent.mcp_servers there is no such tool", () => {
    expect(without.captures.length).toBeGreaterThan(0);
    for (const capture of without.captures) expect(namespaceTool(capture.request)).toBeUndefined();
  });

  it.todo("the model calls it (needs namespace tools in the proxy's Responses codec)");
});
