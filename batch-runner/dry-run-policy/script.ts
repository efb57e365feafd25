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
 */

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

export function parseScript(body: string): ParsedScript {
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
        error: `polar-script line ${i + 1}: expected "shell: <command>", "tool: <name> {json}", "think: <text>" or "say: <text>", got ${JSON.stringify(line)}`,
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
