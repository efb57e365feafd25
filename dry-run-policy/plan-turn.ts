/**
 * What the dry-run policy "decides" for one request: the script in the first user message (the
 * session's alternative of it), stepped by the number of assistant messages already in the
 * conversation.
 */

import { contentText, type OpenAIChatMessageLike } from "../shared/node/qwen3/template-messages.ts";
import { fillElementRefs } from "./page-elements.ts";
import {
  chooseAlternative,
  findScriptBlock,
  parseScript,
  scriptAlternatives,
  scriptFrom,
  scriptTurns,
} from "./script.ts";
import {
  findShellTool,
  type OfferedTool,
  SHELL_TOOL_NAMES,
  type ShellCall,
  shellCall,
} from "./shell-tool.ts";

export interface PlannedTurn {
  reasoning?: string;
  content: string;
  toolCalls: ShellCall[];
}

/** The answer when the conversation holds no polar-script. */
export const NO_SCRIPT_TEXT = "Hello from the Polar dry-run policy.";
/** The answer once every scripted turn has been taken. */
export const SCRIPT_DONE_TEXT = "The polar-script has no more steps.";

export interface PlanInput {
  messages: readonly OpenAIChatMessageLike[];
  tools?: readonly OfferedTool[] | null;
  /** `"none"` hides the tools, as a real model would not call them. */
  toolChoice?: unknown;
  /**
   * The proxy's session id (its `x-polar-session-id` header): picks the script alternative. Every
   * call of a session carries the same one, so a session stays on its alternative across turns.
   */
  sessionId?: string;
}

export function planTurn(input: PlanInput): PlannedTurn {
  const found = findScript(input.messages);
  if (found === null) return { content: NO_SCRIPT_TEXT, toolCalls: [] };
  if (found.body === null) return { content: SCRIPT_DONE_TEXT, toolCalls: [] };

  const alternatives = scriptAlternatives(found.body);
  const chosen = alternatives[chooseAlternative(alternatives.length, input.sessionId)];
  const parsed = parseScript(chosen.body, chosen.firstLine);
  if (!parsed.ok) return { content: parsed.error, toolCalls: [] };

  const turns = scriptTurns(parsed.steps);
  const index = turnIndex(input.messages, found.at);
  if (asksForSummary(input.messages)) return { content: summaryOf(parsed.steps, index), toolCalls: [] };
  const turn = turns[index];
  if (!turn) return { content: SCRIPT_DONE_TEXT, toolCalls: [] };

  const planned: PlannedTurn = { content: "", toolCalls: [] };
  if (turn.reasoning !== undefined) planned.reasoning = turn.reasoning;
  const action = turn.action;
  if (action.kind === "say") {
    const filled = fillElementRefs(action.text, lastUserText(input.messages));
    planned.content = "text" in filled ? filled.text : filled.error;
  }
  if (action.kind === "shell") {
    const tools = input.toolChoice === "none" ? undefined : input.tools;
    const tool = findShellTool(tools);
    if (tool) planned.toolCalls.push(shellCall(tool, action.command));
    else {
      // Said out loud rather than failing, so the reason shows up in the trajectory.
      const offered = (tools ?? []).map((t) => t.function?.name).filter(Boolean);
      planned.content =
        `polar-script step ${index + 1} wants a shell tool (${SHELL_TOOL_NAMES.join(", ")}) but the request ` +
        `offers ${offered.length > 0 ? offered.join(", ") : "no tools"}; command was: ${action.command}`;
    }
  }
  if (action.kind === "tool") {
    const tools = input.toolChoice === "none" ? undefined : input.tools;
    const tool = tools?.find((t) => t.function?.name === action.name);
    if (tool) planned.toolCalls.push({ name: action.name, arguments: action.arguments });
    else {
      const offered = (tools ?? []).map((t) => t.function?.name).filter(Boolean);
      planned.content =
        `polar-script step ${index + 1} calls the tool ${action.name} but the request offers ` +
        `${offered.length > 0 ? offered.join(", ") : "no tools"}`;
    }
  }
  return planned;
}

/**
 * Harnesses that send every step as a fresh conversation (a system prompt and one state message
 * with their history as text in it: browser-use) have no assistant messages to count. They number
 * the step in that message instead (1-based), and the policy takes the turn from there.
 */
const STEP_NUMBERS = [
  // browser-use 0.13 (agent/prompts.py): "<step_info>Step3 maximum:20".
  /<step_info>Step(\d+) maximum:/,
];

function lastUserText(messages: readonly OpenAIChatMessageLike[]): string {
  const last = [...messages].reverse().find((m) => m.role === "user");
  return last ? contentText(last.content) : "";
}

/** The turn to take: assistant messages since the script, else a step number the harness wrote. */
function turnIndex(messages: readonly OpenAIChatMessageLike[], scriptAt: number): number {
  const assistants = messages.slice(scriptAt).filter((m) => m.role === "assistant").length;
  if (assistants > 0) return assistants;
  const text = lastUserText(messages);
  for (const pattern of STEP_NUMBERS) {
    const step = pattern.exec(text);
    if (step) return Math.max(0, Number(step[1]) - 1);
  }
  return 0;
}

/**
 * Where the script is: the latest summary the policy wrote (a compacted history carries it in a
 * user message, Codex after the task's own message) with the turns taken since, else the first
 * user message that holds a script (harnesses such as Codex send context, e.g.
 * `<environment_context>`, as a user message before the task's instruction) with every turn. A
 * summary with nothing left has no script (`body` null). Null: no script anywhere.
 */
function findScript(messages: readonly OpenAIChatMessageLike[]): { body: string | null; at: number } | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role !== "user") continue;
    const text = contentText(messages[i].content);
    if (text.includes(SUMMARY_HEAD)) return { body: findScriptBlock(text) ?? null, at: i };
  }
  for (const [i, m] of messages.entries()) {
    if (m.role !== "user") continue;
    const body = findScriptBlock(contentText(m.content));
    if (body !== undefined) return { body, at: i };
  }
  return null;
}

/**
 * A harness compacting its history asks for a summary in its last user message. A real model would
 * answer in text; the policy's summary carries the steps not yet taken, so the conversation that
 * starts from it goes on with the script.
 */
const SUMMARY_REQUESTS = [
  // Claude Code: "Your task is to create a detailed summary of the conversation so far".
  /create a detailed summary of the conversation so far/i,
  // Codex (core/templates/compact/prompt.md).
  /CONTEXT CHECKPOINT COMPACTION/,
];
/** How every summary the policy writes begins: the mark `findScript` looks for. */
const SUMMARY_HEAD = "Summary of a polar-script conversation.";

function asksForSummary(messages: readonly OpenAIChatMessageLike[]): boolean {
  const last = [...messages].reverse().find((m) => m.role === "user");
  if (!last) return false;
  const text = contentText(last.content);
  return SUMMARY_REQUESTS.some((r) => r.test(text));
}

function summaryOf(steps: Parameters<typeof scriptFrom>[0], index: number): string {
  const rest = scriptFrom(steps, index);
  const task =
    rest === ""
      ? `${SUMMARY_HEAD} Nothing is left to do.`
      : `${SUMMARY_HEAD} The steps left:\n\n\`\`\`polar-script\n${rest}\n\`\`\``;
  return `<analysis>The conversation follows a polar-script; ${index} of its turns are done.</analysis>\n<summary>\n${task}\n</summary>`;
}
