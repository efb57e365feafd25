import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliHarnessName } from "../../batch-runner/harness/registry.ts";
import { TOOL_DESCRIPTION } from "./harness-mcp.ts";
import { type OneSession, POLAR, runOneSession } from "./polar-run-process.ts";

/*
 * The HTTP transports in each CLI's own format: our note server in HTTP mode (examples/mcp/
 * note-server.mjs --http) on 127.0.0.1, Claude Code configured for it as streamable-http and
 * Gemini CLI as sse, the dry-run policy scripted to call its tool. In a sandbox such a server is a
 * side service of the session or a loopback server inside it; here the sessions run with the
 * `process` runtime (polar run allows it) so they reach the host's loopback: this checks the config
 * format against the real CLIs, not the sandbox (the stdio tests run in bwrap).
 */
const SERVER = join(POLAR, "..", "..", "examples", "mcp", "note-server.mjs");

let server: ChildProcess;
let notesDir: string;
let port: number;

function task(harness: CliHarnessName, transport: string, path: string, calls: string[]) {
  return {
    task_id: `e2e-mcp-http-${harness.replaceAll("_", "-")}`,
    instruction: [
      "Write the note with the notes tool, then answer.",
      "```polar-script",
      ...calls.map((call) => `tool: ${call}`),
      "say: Done.",
      "```",
    ].join("\n"),
    timeout_seconds: 90,
    agent: {
      harness,
      settings: { max_retries: 0 },
      mcp_servers: [{ name: "notes", transport, url: `http://127.0.0.1:${port}/${path}` }],
    },
    runtime: { backend: "process" },
  };
}

const CASES: [CliHarnessName, string, string, (args: string) => string[]][] = [
  [
    "claude_code",
    "streamable-http",
    "mcp",
    (args) => [
      `ToolSearch ${JSON.stringify({ query: "select:mcp__notes__write_note", max_results: 1 })}`,
      `mcp__notes__write_note ${args}`,
    ],
  ],
  ["gemini_cli", "sse", "sse", (args) => [`mcp_notes_write_note ${args}`]],
];

describe("HTTP MCP servers from agent.mcp_servers", () => {
  const sessions = new Map<string, OneSession>();

  beforeAll(async () => {
    notesDir = await mkdtemp(join(tmpdir(), "mcp-http-notes-"));
    server = spawn(process.execPath, [SERVER, "--http", "0", "--dir", notesDir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.stdout?.once("data", (chunk) => resolve(Number(/listening (\d+)/.exec(String(chunk))?.[1])));
    });
    for (const [harness, transport, path, calls] of CASES) {
      const args = JSON.stringify({ path: `${harness}.txt`, text: `from ${harness}\n` });
      sessions.set(harness, await runOneSession(harness, task(harness, transport, path, calls(args))));
    }
  }, 400_000);

  afterAll(async () => {
    server?.kill();
    for (const session of sessions.values()) await session.cleanup();
    if (notesDir) await rm(notesDir, { recursive: true, force: true });
  });

  it.each(CASES.map(([harness, transport]) => [harness, transport]))(
    "%s reaches the server over %s and its call writes the note",
    async (harness) => {
      const { run, result, captures } = sessions.get(harness) as OneSession;
      expect(run.code, run.output).toBe(0);
      expect(result.status, result.error ?? "").toBe("COMPLETED");
      const requests = captures.map((c) => JSON.stringify(c.request));
      expect(
        requests.some((r) => r.includes(TOOL_DESCRIPTION)),
        "the server's tool was listed",
      ).toBe(true);
      expect(await readFile(join(notesDir, `${harness}.txt`), "utf8")).toBe(`from ${harness}\n`);
    },
  );
});
