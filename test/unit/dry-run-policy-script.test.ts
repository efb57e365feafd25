import { describe, expect, it } from "vitest";
import { NO_SCRIPT_TEXT, planTurn, SCRIPT_DONE_TEXT } from "../../dry-run-policy/plan-turn.ts";
import { findScriptBlock, parseScript, scriptTurns } from "../../dry-run-policy/script.ts";
import { commandProperty, findShellTool, shellCall } from "../../dry-run-policy/shell-tool.ts";
import { scriptMessage } from "../support/policy.ts";

const EXAMPLE = [
  "shell: echo hi > hello.txt",
  "think: I should check the file",
  "shell: cat hello.txt",
  "say: Done.",
];

function tool(name: string, properties: Record<string, unknown>, required?: string[]) {
  return { type: "function", function: { name, parameters: { type: "object", properties, required } } };
}
const bash = tool("Bash", { command: { type: "string" }, timeout: { type: "number" } }, ["command"]);

describe("polar-script parsing", () => {
  it("finds the fenced block and reads its steps in order", () => {
    const body = findScriptBlock(scriptMessage(EXAMPLE));
    expect(body).toBeDefined();
    const parsed = parseScript(body!);
    expect(parsed).toEqual({
      ok: true,
      steps: [
        { kind: "shell", text: "echo hi > hello.txt" },
        { kind: "think", text: "I should check the file" },
        { kind: "shell", text: "cat hello.txt" },
        { kind: "say", text: "Done." },
      ],
    });
  });

  it("returns undefined for text without a polar-script block", () => {
    expect(findScriptBlock("```bash\nshell: ls\n```")).toBeUndefined();
    expect(findScriptBlock("just words")).toBeUndefined();
  });

  it("skips blank and # lines and joins indented continuation lines", () => {
    const parsed = parseScript("# setup\n\nsay: line one\n  line two\nshell: ls");
    expect(parsed).toEqual({
      ok: true,
      steps: [
        { kind: "say", text: "line one\nline two" },
        { kind: "shell", text: "ls" },
      ],
    });
  });

  it("names the line of an unknown step", () => {
    const parsed = parseScript("say: ok\nrun: ls");
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain("line 2");
  });

  it("groups think steps into the next action's turn", () => {
    const parsed = parseScript(findScriptBlock(scriptMessage([...EXAMPLE, "think: trailing"]))!);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(scriptTurns(parsed.steps)).toEqual([
      { action: { kind: "shell", command: "echo hi > hello.txt" } },
      { reasoning: "I should check the file", action: { kind: "shell", command: "cat hello.txt" } },
      { action: { kind: "say", text: "Done." } },
      { reasoning: "trailing", action: { kind: "none" } },
    ]);
  });
});

describe("shell tool matching", () => {
  it("prefers known shell names, case-insensitively, over other tools", () => {
    const tools = [tool("Read", { path: { type: "string" } }, ["path"]), bash];
    expect(findShellTool(tools)?.function?.name).toBe("Bash");
    expect(findShellTool([tool("bash", {})])?.function?.name).toBe("bash");
    expect(findShellTool([tool("run_shell_command", {})])?.function?.name).toBe("run_shell_command");
    expect(findShellTool([tool("exec_command", {})])?.function?.name).toBe("exec_command");
    expect(findShellTool([tool("shell", {})])?.function?.name).toBe("shell");
    expect(findShellTool([tool("Read", {})])).toBeUndefined();
    expect(findShellTool(undefined)).toBeUndefined();
  });

  it("fills the command property each harness declares", () => {
    expect(shellCall(bash, "ls")).toEqual({ name: "Bash", arguments: { command: "ls" } });
    const codexExec = tool("exec_command", { cmd: { type: "string" }, workdir: { type: "string" } }, ["cmd"]);
    expect(shellCall(codexExec, "ls")).toEqual({ name: "exec_command", arguments: { cmd: "ls" } });
    const gemini = tool("run_shell_command", { command: { type: "string" }, is_background: {} }, ["command"]);
    expect(shellCall(gemini, "pwd").arguments).toEqual({ command: "pwd" });
  });

  it("gives an argv array when the command property is an array", () => {
    const codexShell = tool("shell", { command: { type: "array", items: { type: "string" } } }, ["command"]);
    expect(shellCall(codexShell, "echo hi")).toEqual({
      name: "shell",
      arguments: { command: ["bash", "-lc", "echo hi"] },
    });
  });

  it("gives a one-line list when the property is a list of command lines (Cline's run_commands)", () => {
    const cline = tool("run_commands", { commands: { type: "array", items: { type: "string" } } }, [
      "commands",
    ]);
    expect(shellCall(cline, "echo hi > hello.txt")).toEqual({
      name: "run_commands",
      arguments: { commands: ["echo hi > hello.txt"] },
    });
  });

  it("uses the first required property when none is named like a command", () => {
    expect(commandProperty({ properties: { input: { type: "string" } }, required: ["input"] })).toEqual({
      name: "input",
      argv: false,
      list: false,
    });
    expect(commandProperty(undefined)).toEqual({ name: "command", argv: false, list: false });
    expect(commandProperty({ properties: { cmd: { type: "string" } } })).toEqual({
      name: "cmd",
      argv: false,
      list: false,
    });
  });
});

describe("planTurn", () => {
  const user = { role: "user", content: scriptMessage(EXAMPLE) };
  const call = (id: string) => ({ id, type: "function", function: { name: "Bash", arguments: "{}" } });

  it("takes the step numbered by the assistant messages already present", () => {
    expect(planTurn({ messages: [user], tools: [bash] })).toEqual({
      content: "",
      toolCalls: [{ name: "Bash", arguments: { command: "echo hi > hello.txt" } }],
    });
    const afterOne = [
      user,
      { role: "assistant", content: null, tool_calls: [call("a")] },
      { role: "tool", content: "" },
    ];
    expect(planTurn({ messages: afterOne, tools: [bash] })).toEqual({
      reasoning: "I should check the file",
      content: "",
      toolCalls: [{ name: "Bash", arguments: { command: "cat hello.txt" } }],
    });
    const afterTwo = [
      ...afterOne,
      { role: "assistant", content: null, tool_calls: [call("b")] },
      { role: "tool", content: "hi" },
    ];
    expect(planTurn({ messages: afterTwo, tools: [bash] })).toEqual({ content: "Done.", toolCalls: [] });
    const afterAll = [
      ...afterTwo,
      { role: "assistant", content: "Done." },
      { role: "user", content: "more?" },
    ];
    expect(planTurn({ messages: afterAll, tools: [bash] }).content).toBe(SCRIPT_DONE_TEXT);
  });

  it("answers a fixed text without a script", () => {
    expect(planTurn({ messages: [{ role: "user", content: "hello" }], tools: [bash] })).toEqual({
      content: NO_SCRIPT_TEXT,
      toolCalls: [],
    });
  });

  it("reads the script of the first user message that has one, from content parts too", () => {
    const parts = { role: "user", content: [{ type: "text", text: scriptMessage(["say: from parts"]) }] };
    expect(planTurn({ messages: [{ role: "system", content: "sys" }, parts] }).content).toBe("from parts");
    // Codex sends `<environment_context>` as a user message before the instruction.
    const afterContext = [
      { role: "user", content: "<environment_context>cwd</environment_context>" },
      { role: "user", content: scriptMessage(["say: second"]) },
      { role: "user", content: scriptMessage(["say: third"]) },
    ];
    expect(planTurn({ messages: afterContext }).content).toBe("second");
  });

  it("says why when a shell step meets no shell tool (or tool_choice none)", () => {
    const noTool = planTurn({ messages: [user], tools: [tool("Read", {}, [])] });
    expect(noTool.toolCalls).toEqual([]);
    expect(noTool.content).toContain("Read");
    expect(noTool.content).toContain("echo hi > hello.txt");
    expect(planTurn({ messages: [user], tools: [bash], toolChoice: "none" }).toolCalls).toEqual([]);
  });

  it("reports a script error as text", () => {
    const bad = { role: "user", content: scriptMessage(["jump: now"]) };
    expect(planTurn({ messages: [bad] }).content).toContain("polar-script line 1");
  });
});

describe("tool: steps (a named tool, e.g. a sub-agent spawn)", () => {
  const agentTool = { type: "function", function: { name: "Agent", parameters: {} } };
  const script = (line: string) => scriptMessage([line, "say: Done."]);

  it("calls the named tool with the JSON arguments, backticks written as \\u0060", () => {
    const line =
      'tool: Agent {"prompt": "\\u0060\\u0060\\u0060polar-script\\nsay: sub\\n\\u0060\\u0060\\u0060"}';
    const planned = planTurn({ messages: [{ role: "user", content: script(line) }], tools: [agentTool] });
    expect(planned.toolCalls).toEqual([
      { name: "Agent", arguments: { prompt: "```polar-script\nsay: sub\n```" } },
    ]);
    // The sub-agent's own script is found in its first user message.
    expect(findScriptBlock(planned.toolCalls[0].arguments.prompt as string)).toBe("say: sub");
  });

  it("says why when the tool is not offered or the arguments are not a JSON object", () => {
    const missing = planTurn({
      messages: [{ role: "user", content: script('tool: Agent {"prompt": "x"}') }],
    });
    expect(missing.toolCalls).toEqual([]);
    expect(missing.content).toMatch(/calls the tool Agent but the request offers no tools/);
    const bad = parseScript("tool: Agent [1, 2]");
    expect(bad.ok).toBe(false);
  });
});

describe("summary requests (a harness compacting its history)", () => {
  it("answers with the steps not yet taken, so the conversation can go on from the summary", () => {
    const messages = [
      {
        role: "user",
        content: scriptMessage([
          "shell: echo hi > hello.txt",
          "think: check it",
          "shell: cat hello.txt",
          "say: Done.",
        ]),
      },
      { role: "assistant", content: null, tool_calls: [] },
      { role: "user", content: "Your task is to create a detailed summary of the conversation so far." },
    ];
    const planned = planTurn({ messages, tools: [{ type: "function", function: { name: "bash" } }] });
    expect(planned.toolCalls).toEqual([]);
    expect(planned.content).toMatch(/<summary>[\s\S]*<\/summary>/);
    // The summary's script starts at the second turn (its thought included) and is itself followable.
    const body = findScriptBlock(planned.content);
    expect(body).toBe("think: check it\nshell: cat hello.txt\nsay: Done.");
    const next = planTurn({
      messages: [{ role: "user", content: planned.content }],
      tools: [{ type: "function", function: { name: "bash" } }],
    });
    expect(next.toolCalls[0]).toMatchObject({ name: "bash", arguments: { command: "cat hello.txt" } });
  });

  it("follows the summary in a later user message (Codex keeps the task's message before it)", () => {
    const bash = [{ type: "function", function: { name: "bash" } }];
    const task = scriptMessage(["shell: echo hi > hello.txt", "shell: cat hello.txt", "say: Done."]);
    const summary = planTurn({
      messages: [
        { role: "user", content: "<environment_context>cwd</environment_context>" },
        { role: "user", content: task },
        { role: "assistant", content: null, tool_calls: [] },
        {
          role: "user",
          content: "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.",
        },
      ],
      tools: bash,
    });
    expect(findScriptBlock(summary.content)).toBe("shell: cat hello.txt\nsay: Done.");
    // Codex's compacted history: context, the task's own message, then the summary; the policy
    // follows the summary, counting only the turns taken after it.
    const compacted = [
      { role: "user", content: "<environment_context>cwd</environment_context>" },
      { role: "user", content: task },
      { role: "user", content: `Another language model started to solve this problem.\n${summary.content}` },
    ];
    const first = planTurn({ messages: compacted, tools: bash });
    expect(first.toolCalls[0]).toMatchObject({ arguments: { command: "cat hello.txt" } });
    const second = planTurn({
      messages: [...compacted, { role: "assistant", content: null, tool_calls: [] }],
      tools: bash,
    });
    expect(second.content).toBe("Done.");
  });

  it("a summary with nothing left ends the script instead of starting it over", () => {
    const task = scriptMessage(["say: Done."]);
    const summary = planTurn({
      messages: [
        { role: "user", content: task },
        { role: "assistant", content: "Done." },
        { role: "user", content: "Your task is to create a detailed summary of the conversation so far." },
      ],
    });
    expect(summary.content).toMatch(/Nothing is left to do/);
    const next = planTurn({
      messages: [
        { role: "user", content: task },
        { role: "user", content: summary.content },
      ],
    });
    expect(next.content).toBe(SCRIPT_DONE_TEXT);
  });
});
