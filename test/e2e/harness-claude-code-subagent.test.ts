import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { type OneSession, POLAR, runOneSession, runProcess, scriptedTask } from "./polar-run-process.ts";

/*
 * Sub-agent lineage with the real Claude Code: the scripted main agent calls its `Agent` tool (the
 * Task tool of older releases); the sub-agent, whose first user message is the tool call's prompt
 * (a script of its own), writes hello.txt and reports back; the main agent then answers. The
 * trajectory must be a tree: the sub-agent's trace names the main trace and the tool_use id.
 */
const SUB_SCRIPT = "```polar-script\nshell: echo hi > hello.txt\nsay: Wrote hello.txt.\n```";
const AGENT_ARGS = {
  description: "write hello.txt",
  // Backticks as \u0060 in the outer script, so its fence ends where it should.
  prompt: `Write the file.\n${SUB_SCRIPT}`,
  subagent_type: "general-purpose",
  run_in_background: false,
};
const INSTRUCTION = [
  "Have a sub-agent create hello.txt containing hi, then answer.",
  "```polar-script",
  `tool: Agent ${JSON.stringify(AGENT_ARGS).replaceAll("`", "\\u0060")}`,
  "say: Done.",
  "```",
].join("\n");

const TASK = "e2e-claude-code-subagent";

describe("claude_code: a sub-agent spawned with the Agent tool", () => {
  let session: OneSession;
  let run: OneSession["run"];
  let result: SessionResult;
  let captures: CaptureRecord[];
  let resultFile: string;

  beforeAll(async () => {
    session = await runOneSession(
      "claude_code",
      scriptedTask("claude_code", TASK, { instruction: INSTRUCTION }),
    );
    ({ run, result, captures, resultFile } = session);
  }, 300_000);

  afterAll(async () => {
    await session?.cleanup();
  });

  it("runs the sub-agent and finishes", () => {
    expect(run.code, run.output).toBe(0);
    expect(result.status, result.error ?? "").toBe("COMPLETED");
    expect(result.agent?.final_answer).toBe("Done.");
    expect(result.evaluation?.metadata).toMatchObject({ file: "hello.txt", content: "hi\n" });
  });

  it("links the sub-agent's trace to the main trace and the Agent tool call", () => {
    const traces = result.trajectory.traces;
    const summary = JSON.stringify(
      traces.map((t) => ({
        captures: t.capture_ids,
        brk: t.break_reason,
        parent: t.parent_trace,
        call: t.parent_tool_call_id,
      })),
    );
    const sub = traces.filter((t) => t.parent_tool_call_id !== null);
    expect(sub, summary).toHaveLength(1);
    const [child] = sub;
    expect(child.break_reason).toBe("sub_agent");
    const parent = traces[child.parent_trace as number];
    // The parent holds the capture whose answer called the Agent tool...
    const byId = new Map(captures.map((c) => [c.capture_id, c]));
    const spawning = parent.capture_ids
      .map((id) => byId.get(id))
      .find((c) => JSON.stringify(c?.response ?? "").includes('"name":"Agent"'));
    expect(spawning, summary).toBeDefined();
    // ...and the id is the tool_use id Claude Code sent back with the sub-agent's result.
    const later = captures.filter((c) =>
      JSON.stringify(c.request).includes(`"tool_use_id":"${child.parent_tool_call_id}"`),
    );
    expect(later.length, summary).toBeGreaterThan(0);
    // Every trainable token is still one the policy sampled.
    for (const trace of traces) {
      const trainable = trace.response_ids.filter((_, i) => trace.loss_mask[i] === 1);
      const sampled = trace.capture_ids.flatMap((id) => byId.get(id)?.response_token_ids ?? []);
      expect(trainable).toEqual(sampled);
    }
  });

  it("polar inspect shows the tree", async () => {
    const inspect = await runProcess([process.execPath, POLAR, "inspect", resultFile, "--no-text"], 60_000);
    expect(inspect.code, inspect.output).toBe(0);
    const child = result.trajectory.traces.find((t) => t.parent_tool_call_id !== null);
    expect(inspect.output).toContain(`lineage of session ${result.session_id}:`);
    expect(inspect.output).toContain(`sub_agent via tool call ${child?.parent_tool_call_id}`);
  });
});
