import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import {
  INSTRUCTION,
  type OneSession,
  POLAR,
  runOneSession,
  runProcess,
  scriptedTask,
} from "./polar-run-process.ts";

/** A first step whose output (~10k tokens) makes the prompt grow past Codex's limit at once. */
const LONG_OUTPUT_INSTRUCTION = INSTRUCTION.replace("shell: echo hi", "shell: seq 1 2500\nshell: echo hi");
const CODEX_LIMIT = 14_000;

/*
 * Compaction with the real CLIs: a low auto-compaction threshold makes each summarize the scripted
 * conversation part way; the dry-run policy answers the summary request with the steps left, and
 * the conversation goes on from the summary. The chain that starts from the summary must be a
 * `compaction` break linked to the conversation it summarized.
 */
const CASES = [
  {
    harness: "claude_code" as const,
    // Its system prompt alone is ~11.5k tokens: a 20k window at 10% compacts after the first tool result.
    agent: { env: { CLAUDE_CODE_AUTO_COMPACT_WINDOW: "20000", CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: "10" } },
  },
  {
    harness: "codex" as const,
    // Its first prompt is ~6.2k tokens, 16.3k after the long output; the compacted history keeps the
    // user messages and the summary (~6.3k), so a limit between compacts once, after the output.
    agent: { settings: { max_retries: 0, config: { model_auto_compact_token_limit: CODEX_LIMIT } } },
    instruction: LONG_OUTPUT_INSTRUCTION,
  },
];

describe.each(CASES)("$harness: auto-compaction", ({ harness, agent, instruction }) => {
  const TASK = `e2e-${harness.replace("_", "-")}-compaction`;
  let session: OneSession;
  let run: OneSession["run"];
  let result: SessionResult;
  let captures: CaptureRecord[];
  let resultFile: string;

  beforeAll(async () => {
    const task = scriptedTask(harness, TASK);
    Object.assign(task.agent, agent);
    if (instruction) task.instruction = instruction;
    session = await runOneSession(harness, task);
    ({ run, result, captures, resultFile } = session);
  }, 300_000);

  afterAll(async () => {
    await session?.cleanup();
  });

  it("summarizes, goes on from the summary and finishes the task", () => {
    expect(run.code, run.output).toBe(0);
    expect(result.status, result.error ?? "").toBe("COMPLETED");
    expect(result.agent?.final_answer).toBe("Done.");
    expect(result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: "hi\n" });
    const summaries = captures.filter((c) => JSON.stringify(c.response).includes("<summary>"));
    expect(summaries.length).toBeGreaterThan(0);
  });

  it("links the chain that starts from the summary to the one it summarized", () => {
    const traces = result.trajectory.traces;
    const summary = JSON.stringify(
      traces.map((t) => ({
        captures: t.capture_ids,
        brk: t.break_reason,
        parent: t.parent_trace,
        orphan: t.orphan,
      })),
    );
    const compacted = traces.filter((t) => t.break_reason === "compaction");
    expect(compacted, summary).toHaveLength(1);
    const parent = traces[compacted[0].parent_trace as number];
    expect(parent, summary).toBeDefined();
    // The summarized conversation holds the session's first call.
    const firstCall = [...captures].sort((a, b) => (a.capture_id < b.capture_id ? -1 : 1))[0];
    expect(parent.capture_ids).toContain(firstCall.capture_id);
    // The summary was used (it became the new history), so it is no orphan; every mask-1 token was sampled.
    const byId = new Map(captures.map((c) => [c.capture_id, c]));
    for (const trace of traces) {
      const used = trace.capture_ids.some((id) =>
        JSON.stringify(byId.get(id)?.response).includes("<summary>"),
      );
      if (used) expect(trace.orphan, summary).toBe(false);
      if (trace.orphan) continue;
      const trainable = trace.response_ids.filter((_, i) => trace.loss_mask[i] === 1);
      const sampled = trace.capture_ids.flatMap((id) => byId.get(id)?.response_token_ids ?? []);
      expect(trainable).toEqual(sampled);
    }
  });

  it("polar inspect shows the compaction in the lineage", async () => {
    const inspect = await runProcess([process.execPath, POLAR, "inspect", resultFile, "--no-text"], 60_000);
    expect(inspect.code, inspect.output).toBe(0);
    expect(inspect.output).toContain(`lineage of session ${result.session_id}:`);
    expect(inspect.output).toMatch(/\n {6,}trace \d+ {2}compaction/);
  });
});
