import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpTask, NOTE_ARGS, TOOL_DESCRIPTION } from "./harness-mcp.ts";
import { type OneSession, runOneSession } from "./polar-run-process.ts";

/*
 * Codex reads `[mcp_servers.notes]` from config.toml, starts the server in the sandbox and offers
 * its tool to the model as a Responses `namespace` tool (`mcp__notes` holding `write_note`). The
 * proxy's Responses codec offers it to the engine as the function `mcp__notes__write_note`
 * (proxy-worker/codecs/openai-responses/namespace-tools.ts), answers the engine's call of it as a
 * `function_call` with `namespace: "mcp__notes"` and `name: "write_note"`, which Codex routes to
 * the server, and maps that item back to the flat name when Codex sends it in the next request.
 */
type Item = { type?: string; name?: string; namespace?: string; call_id?: string; output?: unknown };

function namespaceTool(request: unknown): unknown {
  const tools = (request as { tools?: { type?: string; name?: string }[] }).tools ?? [];
  return tools.find((t) => t.type === "namespace" && t.name === "mcp__notes");
}

const inputItems = (request: unknown): Item[] => {
  const input = (request as { input?: unknown }).input;
  return Array.isArray(input) ? (input as Item[]) : [];
};

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

  it("the model calls it through the proxy, Codex runs it on the server, and the file is written: reward 1", () => {
    const { result, captures } = withServer;
    expect(result.status, result.error ?? "").toBe("COMPLETED");
    // The engine saw the namespace's tool as one flat function.
    const offeredUpstream = captures.some((c) =>
      JSON.stringify((c.chat_request as { tools?: unknown }).tools ?? []).includes(
        '"name":"mcp__notes__write_note"',
      ),
    );
    expect(offeredUpstream, "the engine was offered mcp__notes__write_note").toBe(true);
    // Codex sent the call back as it received it (namespace + own name), with the server's answer.
    const later = captures.map((c) => inputItems(c.request)).find((items) => items.some((i) => i.namespace));
    const call = later?.find((i) => i.type === "function_call" && i.namespace === "mcp__notes");
    expect(call, "Codex's next request holds the namespaced call").toMatchObject({ name: "write_note" });
    const output = later?.find((i) => i.type === "function_call_output" && i.call_id === call?.call_id);
    expect(JSON.stringify(output?.output)).toContain("wrote hello.txt");
    expect(result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: "hi\n" });
    expect(result.reward).toBe(1);
  });

  it("without agent.mcp_servers there is no such tool: reward 0", () => {
    expect(without.captures.length).toBeGreaterThan(0);
    for (const capture of without.captures) expect(namespaceTool(capture.request)).toBeUndefined();
    expect(without.result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: null });
    expect(without.result.reward).toBe(0);
  });
});
