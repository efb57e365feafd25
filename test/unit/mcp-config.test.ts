import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  claudeMcpConfig,
  codexMcpServers,
  geminiMcpServers,
  opencodeMcp,
} from "../../batch-runner/harness/mcp-config.ts";
import type { PresetContext } from "../../batch-runner/harness/preset.ts";
import { harnessPresets } from "../../batch-runner/harness/registry.ts";
import { MCP_HARNESS_TRANSPORTS, McpServers } from "../../shared/schemas/mcp-servers.ts";
import { AgentSpec, HARNESSES } from "../../shared/schemas/task.ts";
import { validateTask } from "../../shared/tasks/validate-task.ts";

const STDIO = {
  name: "notes",
  transport: "stdio",
  command: "node",
  args: ["server.mjs"],
  env: { NOTES_DIR: "out" },
};
/** Harbor's header syntax for a credential from the environment, which is refused here. */
const VAR_REF = ["$", "{TOKEN}"].join("");
const HTTP = {
  name: "desk",
  transport: "streamable-http",
  url: "http://desktop:8000/mcp",
  headers: { "X-Token": "abc" },
};
const SSE = { name: "old", transport: "sse", url: "http://127.0.0.1:9000/sse" };

function task(harness: string, servers: unknown[]) {
  return { task_id: "t", instruction: "go", agent: { harness, mcp_servers: servers } };
}

function problems(input: unknown): string[] {
  const check = validateTask(input);
  return check.ok ? [] : check.problems;
}

function ctx(harness: string, servers: unknown[]): PresetContext {
  return {
    agent: AgentSpec.parse({ harness, mcp_servers: servers }),
    instruction: "go",
    proxyUrl: "http://127.0.0.1:8787",
    sessionToken: "tok",
    homeDir: "/h",
    workDir: "/w",
  };
}

describe("agent.mcp_servers: the schema", () => {
  it("takes Harbor's fields, transport defaulting to sse as Harbor's does", () => {
    const [server] = McpServers.parse([{ name: "x", url: "http://side:1/sse" }]);
    expect(server).toEqual({
      name: "x",
      transport: "sse",
      url: "http://side:1/sse",
      args: [],
      env: {},
      headers: {},
    });
    expect(problems(task("claude_code", [STDIO, HTTP, SSE]))).toEqual([]);
  });

  it("refuses what a transport does not take, and what it lacks, by field", () => {
    expect(problems(task("claude_code", [{ name: "a", transport: "stdio" }]))).toEqual([
      "agent.mcp_servers.0.command: required for transport 'stdio'",
    ]);
    expect(
      problems(task("claude_code", [{ name: "a", transport: "streamable-http", command: "x" }])),
    ).toEqual([
      "agent.mcp_servers.0.url: required for transport 'streamable-http'",
      "agent.mcp_servers.0.command: only for transport 'stdio'",
    ]);
    expect(problems(task("claude_code", [{ ...STDIO, headers: { A: "b" } }]))).toEqual([
      "agent.mcp_servers.0.headers: only for the HTTP transports",
    ]);
    expect(problems(task("claude_code", [{ ...SSE, url: "file:///etc/passwd" }]))).toEqual([
      "agent.mcp_servers.0.url: an MCP server url is an http:// or https:// URL",
    ]);
  });

  it("refuses unknown keys, bad names, twice-named servers, header injection and Harbor-style variable headers", () => {
    const found = problems(
      task("claude_code", [
        { ...STDIO, cwd: "/" },
        { ...STDIO, name: "bad name" },
        STDIO,
        { ...HTTP, headers: { "X-A": "1\r\nHost: evil" } },
        { ...HTTP, name: "desk2", headers: { Authorization: `Bearer ${VAR_REF}` } },
      ]),
    );
    expect(found).toContain(
      "agent.mcp_servers.0.cwd: unknown field (expected one of: name, transport, url, command, args, env, headers)",
    );
    expect(found.some((p) => p.startsWith("agent.mcp_servers.1.name: an MCP server name is"))).toBe(true);
    expect(found).toContain("agent.mcp_servers.2.name: notes is named twice");
    expect(found).toContain('agent.mcp_servers.3.headers: header "X-A" must be one line');
    expect(found.some((p) => p.includes("VAR} references are not expanded"))).toBe(true);
  });

  it("refuses a reserved variable in a stdio server's env, as in agent.env", () => {
    const found = problems(task("claude_code", [{ ...STDIO, env: { POLAR_SIGNING_KEY: "x" } }]));
    expect(found[0]).toMatch(/^agent\.mcp_servers\.0\.env\.POLAR_SIGNING_KEY: .*reserved for the runner/);
  });

  it("refuses a harness without an MCP config, by name", () => {
    const takers = Object.keys(MCP_HARNESS_TRANSPORTS);
    for (const harness of HARNESSES.filter((h) => !takers.includes(h))) {
      const found = problems({
        ...task(harness, [STDIO]),
        agent: { harness, mcp_servers: [STDIO], settings: harness === "shell" ? { command: "true" } : {} },
      });
      expect(found, harness).toEqual([
        `agent.mcp_servers: harness "${harness}" cannot take MCP servers: its preset has no MCP configuration (presets that do: ${takers.join(", ")}; docs/harnesses.md "MCP servers")`,
      ]);
      // An empty list asks for nothing, so nothing is refused.
      expect(
        problems({
          task_id: "t",
          instruction: "go",
          agent: { harness, mcp_servers: [], settings: harness === "shell" ? { command: "true" } : {} },
        }),
        harness,
      ).toEqual([]);
    }
  });

  it("refuses a transport the harness's CLI lacks, naming the server", () => {
    expect(problems(task("codex", [STDIO, SSE]))).toEqual([
      'agent.mcp_servers: harness "codex" cannot take MCP server "old": its CLI has no sse transport (it takes stdio, streamable-http)',
    ]);
    expect(problems(task("codex", [STDIO, HTTP]))).toEqual([]);
  });

  it("names only real harnesses", () => {
    for (const name of Object.keys(MCP_HARNESS_TRANSPORTS)) expect(HARNESSES).toContain(name);
  });
});

describe("agent.mcp_servers: each CLI's own format", () => {
  const servers = McpServers.parse([STDIO, HTTP, SSE]);

  it("fills {{polar_root}} in a stdio server's command, args and env, unquoted, in every format", () => {
    const root = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
    const [desktop] = McpServers.parse([
      {
        name: "desktop",
        transport: "stdio",
        command: "{{polar_root}}/bin/x",
        args: [
          "{{ polar_root }}/examples/computer-use/desktop-mcp.mjs",
          "--app",
          "python3 {{polar_root}}/a b.py",
        ],
        env: { APP_DIR: "{{polar_root}}/examples" },
      },
    ]);
    const want = {
      command: `${root}/bin/x`,
      args: [`${root}/examples/computer-use/desktop-mcp.mjs`, "--app", `python3 ${root}/a b.py`],
      env: { APP_DIR: `${root}/examples` },
    };
    expect(claudeMcpConfig([desktop]).mcpServers.desktop).toEqual({ type: "stdio", ...want });
    expect(codexMcpServers([desktop]).desktop).toEqual(want);
    expect(geminiMcpServers("gemini_cli", [desktop]).desktop).toEqual({ ...want, trust: true });
    expect(opencodeMcp([desktop]).desktop).toMatchObject({
      command: [want.command, ...want.args],
      environment: want.env,
    });
  });

  it("Claude Code: --mcp-config JSON (stdio / http / sse)", () => {
    expect(claudeMcpConfig(servers)).toEqual({
      mcpServers: {
        notes: { type: "stdio", command: "node", args: ["server.mjs"], env: { NOTES_DIR: "out" } },
        desk: { type: "http", url: "http://desktop:8000/mcp", headers: { "X-Token": "abc" } },
        old: { type: "sse", url: "http://127.0.0.1:9000/sse" },
      },
    });
  });

  it("Codex: [mcp_servers.<name>], and no sse", () => {
    expect(codexMcpServers(servers.slice(0, 2))).toEqual({
      notes: { command: "node", args: ["server.mjs"], env: { NOTES_DIR: "out" } },
      desk: { url: "http://desktop:8000/mcp", http_headers: { "X-Token": "abc" } },
    });
    expect(() => codexMcpServers(servers)).toThrow(
      /cannot take MCP server "old": its CLI has no sse transport/,
    );
  });

  it("Gemini CLI and Qwen Code: mcpServers with url (sse) or httpUrl (streamable http), trusted", () => {
    const expected = {
      notes: { command: "node", args: ["server.mjs"], env: { NOTES_DIR: "out" }, trust: true },
      desk: { httpUrl: "http://desktop:8000/mcp", headers: { "X-Token": "abc" }, trust: true },
      old: { url: "http://127.0.0.1:9000/sse", trust: true },
    };
    expect(geminiMcpServers("gemini_cli", servers)).toEqual(expected);
    expect(geminiMcpServers("qwen_code", servers)).toEqual(expected);
  });

  it("OpenCode: mcp with local argv or remote url, no OAuth", () => {
    expect(opencodeMcp(servers)).toEqual({
      notes: {
        type: "local",
        command: ["node", "server.mjs"],
        environment: { NOTES_DIR: "out" },
        enabled: true,
      },
      desk: {
        type: "remote",
        url: "http://desktop:8000/mcp",
        headers: { "X-Token": "abc" },
        oauth: false,
        enabled: true,
      },
      old: { type: "remote", url: "http://127.0.0.1:9000/sse", oauth: false, enabled: true },
    });
  });
});

describe("agent.mcp_servers: the presets write them where their CLI reads them", () => {
  const where: Record<string, { file: string; at: (config: Record<string, unknown>) => unknown }> = {
    claude_code: { file: ".claude/polar-mcp.json", at: (c) => c.mcpServers },
    gemini_cli: { file: ".gemini/settings.json", at: (c) => c.mcpServers },
    qwen_code: { file: ".qwen/settings.json", at: (c) => c.mcpServers },
    opencode: { file: ".config/opencode/opencode.json", at: (c) => c.mcp },
  };

  it("every preset that takes MCP servers is covered here, and Codex writes config.toml tables", () => {
    expect(Object.keys(MCP_HARNESS_TRANSPORTS).sort()).toEqual([...Object.keys(where), "codex"].sort());
    const toml = harnessPresets.codex.configFiles(ctx("codex", [STDIO, HTTP]))[".codex/config.toml"];
    expect(toml).toContain('[mcp_servers.notes]\ncommand = "node"\nargs = ["server.mjs"]');
    expect(toml).toContain('[mcp_servers.notes.env]\nNOTES_DIR = "out"');
    expect(toml).toContain('[mcp_servers.desk]\nurl = "http://desktop:8000/mcp"');
    expect(toml).toContain('[mcp_servers.desk.http_headers]\nX-Token = "abc"');
  });

  it.each(Object.entries(where))(
    "%s: the servers are in its config; without them, nothing is",
    (harness, spot) => {
      const preset = harnessPresets[harness as keyof typeof harnessPresets];
      const files = preset.configFiles(ctx(harness, [STDIO]));
      const written = spot.at(JSON.parse(files[spot.file] ?? "{}")) as Record<string, unknown>;
      expect(Object.keys(written ?? {})).toEqual(["notes"]);
      const plain = preset.configFiles(ctx(harness, []));
      expect(spot.at(JSON.parse(plain[spot.file] ?? "{}"))).toBeUndefined();
    },
  );

  it("Claude Code is pointed at its file, and at no other MCP config", () => {
    const argv = harnessPresets.claude_code.invocation(ctx("claude_code", [STDIO]), null).argv;
    const at = argv.indexOf("--mcp-config");
    expect(argv.slice(at, at + 3)).toEqual([
      "--mcp-config",
      "/h/.claude/polar-mcp.json",
      "--strict-mcp-config",
    ]);
    expect(harnessPresets.claude_code.invocation(ctx("claude_code", []), null).argv).not.toContain(
      "--mcp-config",
    );
  });
});
