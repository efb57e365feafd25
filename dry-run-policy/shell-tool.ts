/**
 * Finds the shell-like tool a request offers and fills its arguments with a command, so one
 * script drives every harness: Claude Code `Bash {command}`, Codex `exec_command {cmd}` or
 * `shell {command: string[]}`, Gemini CLI / Qwen Code `run_shell_command {command}`,
 * OpenCode and Pi `bash {command}`, OpenClaw `exec {command}`, Cline `run_commands {commands:
 * string[]}` (a list of whole command lines, not an argv).
 */

export interface OfferedTool {
  type?: string;
  function?: { name?: string; parameters?: unknown } | null;
}

/** Shell tool names in order of preference (compared case-insensitively). */
export const SHELL_TOOL_NAMES = [
  "bash",
  "exec_command",
  "run_shell_command",
  "shell",
  "shell_command",
  "run_command",
  "execute_command",
  "terminal",
  "exec",
  "run_commands",
] as const;

/** Property names that hold the command when a tool declares several required properties. */
const COMMAND_PROPERTY_NAMES = ["command", "cmd", "commands", "script"];

export interface ShellCall {
  name: string;
  arguments: Record<string, unknown>;
}

export function findShellTool(tools: readonly OfferedTool[] | null | undefined): OfferedTool | undefined {
  if (!tools) return undefined;
  for (const wanted of SHELL_TOOL_NAMES) {
    const hit = tools.find((t) => t.function?.name?.toLowerCase() === wanted);
    if (hit) return hit;
  }
  return undefined;
}

interface JsonSchemaObject {
  properties?: Record<string, { type?: unknown } | undefined>;
  required?: unknown;
}

function isArrayType(schema: { type?: unknown } | undefined): boolean {
  const type = schema?.type;
  return type === "array" || (Array.isArray(type) && type.includes("array") && !type.includes("string"));
}

/**
 * Which property receives the command: a required one named like a command, else the first
 * required one, else a declared one named like a command, else `command`.
 */
export function commandProperty(parameters: unknown): { name: string; argv: boolean; list: boolean } {
  const schema = (parameters && typeof parameters === "object" ? parameters : {}) as JsonSchemaObject;
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === "string")
    : [];
  const name =
    required.find((r) => COMMAND_PROPERTY_NAMES.includes(r)) ??
    required[0] ??
    COMMAND_PROPERTY_NAMES.find((n) => n in properties) ??
    "command";
  // An array named `commands` holds whole command lines; any other array is one command's argv.
  const array = isArrayType(properties[name]);
  return { name, argv: array && name !== "commands", list: array && name === "commands" };
}

/**
 * The call that runs `command` with the offered tool; an argv-array property gets
 * `["bash","-lc",command]`, a list of command lines `[command]`.
 */
export function shellCall(tool: OfferedTool, command: string): ShellCall {
  const { name, argv, list } = commandProperty(tool.function?.parameters);
  return {
    name: tool.function?.name ?? "bash",
    arguments: { [name]: argv ? ["bash", "-lc", command] : list ? [command] : command },
  };
}
