import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliHarnessName } from "../../batch-runner/harness/registry.ts";
import { EVALUATOR, type OneSession, POLAR, runOneSession } from "./polar-run-process.ts";

/*
 * agent.mcp_servers through a real harness: our stdio MCP server (examples/mcp/note-server.mjs, one
 * tool, `write_note`) configured by the preset in the CLI's own MCP config; the dry-run policy is
 * scripted to call that tool by the name the CLI gives it; the evaluator checks the file the tool
 * wrote in the work dir. The same task without `mcp_servers` offers no such tool, the policy
 * answers in text, and the reward is 0: the file can only come from the MCP server.
 */
const SERVER = join(POLAR, "..", "..", "examples", "mcp", "note-server.mjs");

/** The server's own description of its tool: in a request only when the harness listed the server's tools. */
export const TOOL_DESCRIPTION = "Write text to a file in the working directory.";
/** The tool's answer: in a request only after the harness called the server. */
const TOOL_RESULT = "wrote hello.txt (3 bytes)";
/** The tool's arguments, as a script line's JSON. */
export const NOTE_ARGS = { path: "hello.txt", text: "hi\n" };

function instruction(calls: readonly string[]): string {
  return [
    "Write hello.txt with the notes tool, then answer.",
    "```polar-script",
    ...calls.map((call) => `tool: ${call}`),
    "say: Done.",
    "```",
  ].join("\n");
}

export function mcpTask(
  harness: CliHarnessName,
  taskId: string,
  calls: readonly string[],
  withServer: boolean,
) {
  return {
    task_id: taskId,
    instruction: instruction(calls),
    timeout_seconds: 90,
    agent: {
      harness,
      settings: { max_retries: 0 },
      // The runner's own node (bound read-only into the sandbox) runs the server, as the harness's child.
      ...(withServer
        ? { mcp_servers: [{ name: "notes", transport: "stdio", command: process.execPath, args: [SERVER] }] }
        : {}),
    },
    evaluator: { strategy: EVALUATOR, config: { file: "hello.txt", expect: "hi" } },
  };
}

/**
 * `calls`: the script's tool calls (`NAME {json}`) that reach the server's `write_note` the way the
 * CLI offers it: directly (`mcp_notes_write_note` in Gemini CLI), or first loaded by the CLI's own
 * tool search (Claude Code's ToolSearch, Qwen Code's tool_search + tool_call), as a model would.
 */
export function describeMcpE2E(harness: CliHarnessName, calls: readonly string[]): void {
  describe(`${harness}: a stdio MCP server from agent.mcp_servers`, () => {
    let withServer: OneSession;
    let without: OneSession;

    beforeAll(async () => {
      const id = `e2e-mcp-${harness.replaceAll("_", "-")}`;
      withServer = await runOneSession(harness, mcpTask(harness, id, calls, true));
      without = await runOneSession(harness, mcpTask(harness, `${id}-none`, calls, false));
    }, 400_000);

    afterAll(async () => {
      await withServer?.cleanup();
      await without?.cleanup();
    });

    it("offers the server's tool to the model, and its call writes the file: reward 1", () => {
      const { run, result, captures } = withServer;
      expect(run.code, run.output).toBe(0);
      expect(result.status, result.error ?? "").toBe("COMPLETED");
      const requests = captures.map((c) => JSON.stringify(c.request));
      expect(
        requests.some((r) => r.includes(TOOL_DESCRIPTION)),
        "the server's tool was listed",
      ).toBe(true);
      expect(
        requests.some((r) => r.includes(TOOL_RESULT)),
        "the server's answer came back",
      ).toBe(true);
      expect(result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: "hi\n" });
      expect(result.reward).toBe(1);
    });

    it("the model reads the instruction as written (its JSON arguments unaltered)", () => {
      const written = JSON.stringify(instruction(calls)).slice(1, -1);
      const first = withServer.captures[0];
      expect(JSON.stringify(first?.request ?? null)).toContain(written);
    });

    it("without agent.mcp_servers the tool is not there: reward 0", () => {
      const { result, captures } = without;
      expect(captures.length).toBeGreaterThan(0);
      for (const capture of captures) expect(JSON.stringify(capture.request)).not.toContain(TOOL_DESCRIPTION);
      expect(result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: null });
      expect(result.reward).toBe(0);
    });
  });
}
