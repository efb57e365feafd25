/**
 * The `polar-script` a test or task writes into the first user message, and its grouping
 * into assistant turns:
 *
 *   ```polar-script
 *   shell: echo hi > hello.txt
 *   think: I should check the file
 *   shell: cat hello.txt
 *   tool: Task {"description": "check", "prompt": "Look at hello.txt"}
 *   say: Done.
 *   ```
 *
 * `think:` lines attach to the next action (`shell:`, `tool:`, `say:`) as reasoning of the same turn.
 * `tool: NAME {json}` calls the offered tool NAME with those arguments (e.g. Claude Code's Task tool,
 * to spawn a sub-agent; a sub-agent's own script goes in its prompt with the backticks written as
 * \u0060 so the outer fence still ends where it should).
 * A line indented under a step continues it (joined with "\n"); blank lines and `#` lines are skipped.
 *
 * A line `---` separates alternative scripts; each session follows one of them
 * (`chooseAlternative`), so the samples of a task can differ as a real policy's would.
 */

import { sampleIndexOf } from "../shared/upstream-session.ts";

export type ScriptStep = { kind: "shell" | "think" | "say" | "tool"; text: string };

export interface ScriptTurn {
  reasoning?: string;
  action:
    | { kind: "shell"; command: string }
    | { kind: "say"; text: string }
    | { kind: "tool"; name: string; arguments: Record<string, unknown> }
    | { kind: "none" };
}

export type ParsedScript = { ok: true; steps: ScriptStep[] } | { ok: false; error: string };

const FENCE = /```polar-script[ \t]*\r?\n([\s\S]*?)(?:\r?\n)?```/;
const STEP = /^(shell|think|say|tool):[ \t]?(.*)$/;
const TOOL_STEP = /^([A-Za-z0-9_.:-]+)[ \t]+(\{.*\})$/s;

/** The script's body in a message text, or undefined when it holds none. */
export function findScriptBlock(text: string): string | undefined {
  return FENCE.exec(text)?.[1];
}

/** A line of its own that separates alternative scripts. */
const ALTERNATIVE_SEPARATOR = /^---[ \t]*$/;

/**
 * The script's alternatives (one when it has no `---` line), each with the body line it starts at
 * so a bad line is named by its line in the whole block.
 */
export function scriptAlternatives(body: string): { body: string; firstLine: number }[] {
  const alternatives: { body: string; firstLine: number }[] = [];
  let current: string[] = [];
  let firstLine = 1;
  body.split(/\r?\n/).forEach((line, i) => {
    if (!ALTERNATIVE_SEPARATOR.test(line)) {
      current.push(line);
      return;
    }
    alternatives.push({ body: current.join("\n"), firstLine });
    current = [];
    firstLine = i + 2;
  });
  alternatives.push({ body: current.join("\n"), firstLine });
  return alternatives;
}

/**
 * The alternative a session follows: sample i of a task takes alternative i mod count, so a group
 * of num_samples >= count samples covers every alternative. A session id that names no sample
 * index is hashed (still stable across the session's calls); no session id (a call that did not come
 * through the proxy) takes the first.
 */
export function chooseAlternative(count: number, sessionId: string | undefined): number {
  if (count <= 1 || sessionId === undefined) return 0;
  const sampleIndex = sampleIndexOf(sessionId);
  if (sampleIndex !== undefined) return sampleIndex % count;
  let hash = 0x811c9dc5;
  for (const ch of sessionId) hash = Math.imul(hash ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return hash % count;
}

export function parseScript(body: string, firstLine = 1): ParsedScript {
  const steps: ScriptStep[] = [];
  const lines = body.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    if (/^[ \t]/.test(line) && steps.length > 0) {
      steps[steps.length - 1].text += `\n${line.trim()}`;
      continue;
    }
    const match = STEP.exec(line);
    if (!match) {
      return {
        ok: false,
        error: `polar-script line ${i + firstLine}: expected "shell: <command>", "tool: <name> {json}", "think: <text>" or "say: <text>", got ${JSON.stringify(line)}`,
      };
    }
    steps.push({ kind: match[1] as ScriptStep["kind"], text: match[2] });
  }
  for (const [i, step] of steps.entries()) {
    if (step.kind === "tool" && toolStep(step.text) === null) {
      return {
        ok: false,
        error: `polar-script step ${i + 1}: expected "tool: <name> {json object of arguments}", got ${JSON.stringify(step.text)}`,
      };
    }
  }
  return { ok: true, steps };
}

/** `NAME {json}` of a `tool:` step, or null when it is not that. */
function toolStep(text: string): { name: string; arguments: Record<string, unknown> } | null {
  const m = TOOL_STEP.exec(text.trim());
  if (!m) return null;
  try {
    const args: unknown = JSON.parse(m[2]);
    if (typeof args !== "object" || args === null || Array.isArray(args)) return null;
    return { name: m[1], arguments: args as Record<string, unknown> };
  } catch {
    return null;
  }
}

/** Groups steps into assistant turns: each `think:` joins the following action's turn. */
export function scriptTurns(steps: readonly ScriptStep[]): ScriptTurn[] {
  const turns: ScriptTurn[] = [];
  let thoughts: string[] = [];
  for (const step of steps) {
    if (step.kind === "think") {
      thoughts.push(step.text);
      continue;
    }
    const tool = step.kind === "tool" ? toolStep(step.text) : null;
    const turn: ScriptTurn =
      step.kind === "shell"
        ? { action: { kind: "shell", command: step.text } }
        : tool
          ? { action: { kind: "tool", ...tool } }
          : { action: { kind: "say", text: step.text } };
    if (thoughts.length > 0) turn.reasoning = thoughts.join("\n");
    turns.push(turn);
    thoughts = [];
  }
  // Trailing thoughts with no action after them still make a (reasoning-only) turn.
  if (thoughts.length > 0) turns.push({ reasoning: thoughts.join("\n"), action: { kind: "none" } });
  return turns;
}

/**
 * The script from turn `index` on, as a polar-script body: what the policy writes into a summary
 * when a harness compacts its history, so the conversation that starts from the summary goes on
 * with the steps not yet taken.
 */
export function scriptFrom(steps: readonly ScriptStep[], index: number): string {
  const lines: string[] = [];
  // A step belongs to turn `turn`: the count of actions before it (thoughts join the next action).
  let turn = 0;
  for (const step of steps) {
    if (turn >= index) lines.push(`${step.kind}: ${step.text.replaceAll("\n", "\n  ")}`);
    if (step.kind !== "think") turn++;
  }
  return lines.join("\n");
}
