/**
 * The `polar-script` a test or task writes into the first user message, and its grouping
 * into assistant turns:
 *
 *   ```polar-script
 *   shell: echo hi > hello.txt
 *   think: I should check the file
 *   shell: cat hello.txt
 *   say: Done.
 *   ```
 *
 * `think:` lines attach to the next `shell:`/`say:` as reasoning of the same turn.
 * A line indented under a step continues it (joined with "\n"); blank lines and `#` lines are skipped.
 */

export type ScriptStep = { kind: "shell" | "think" | "say"; text: string };

export interface ScriptTurn {
  reasoning?: string;
  action: { kind: "shell"; command: string } | { kind: "say"; text: string } | { kind: "none" };
}

export type ParsedScript = { ok: true; steps: ScriptStep[] } | { ok: false; error: string };

const FENCE = /```polar-script[ \t]*\r?\n([\s\S]*?)(?:\r?\n)?```/;
const STEP = /^(shell|think|say):[ \t]?(.*)$/;

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
        error: `polar-script line ${i + 1}: expected "shell: <command>", "think: <text>" or "say: <text>", got ${JSON.stringify(line)}`,
      };
    }
    steps.push({ kind: match[1] as ScriptStep["kind"], text: match[2] });
  }
  return { ok: true, steps };
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
    const turn: ScriptTurn =
      step.kind === "shell"
        ? { action: { kind: "shell", command: step.text } }
        : { action: { kind: "say", text: step.text } };
    if (thoughts.length > 0) turn.reasoning = thoughts.join("\n");
    turns.push(turn);
    thoughts = [];
  }
  // Trailing thoughts with no action after them still make a (reasoning-only) turn.
  if (thoughts.length > 0) turns.push({ reasoning: thoughts.join("\n"), action: { kind: "none" } });
  return turns;
}
