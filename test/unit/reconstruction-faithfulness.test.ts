import { describe, expect, it } from "vitest";
import { buildTrajectory } from "../../batch-runner/reconstruction/build-session.ts";
import { BuilderConfigError, CaptureGapError } from "../../batch-runner/reconstruction/builder.ts";
import { checkInvariants, InvariantViolation } from "../../batch-runner/reconstruction/invariants.ts";
import { perRequestBuilderWith } from "../../batch-runner/reconstruction/per-request.ts";
import { prefixMergingBuilder } from "../../batch-runner/reconstruction/prefix-merging.ts";
import { reconstructTask } from "../../batch-runner/reconstruction/reconstruct-task.ts";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { Trajectory } from "../../shared/schemas/trajectory.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { capture, IM_END } from "../support/reconstruction-captures.ts";

const NL = 198;
const TOOL_CALL = 151657;
const merge = (captures: CaptureRecord[], config: Record<string, unknown> = {}) =>
  prefixMergingBuilder(config).build(captures);
const built = (captures: CaptureRecord[], config: Record<string, unknown> = {}) =>
  buildTrajectory(captures, { strategy: "prefix_merging", config }, "COMPLETED");
const lp = (c: CaptureRecord) => c.response_logprobs as number[];

type Message = { role: string; content: string; reasoning_content?: string };
const chat = (messages: Message[], tools: unknown[] = []) => ({
  chat_request: { model: "policy", messages, ...(tools.length > 0 ? { tools } : {}) },
});
const answer = (content: string) => ({
  response: { choices: [{ message: { role: "assistant", content } }] },
});

describe("capture gaps (a successful call without token ids)", () => {
  // a -> (gap) -> c: the id-less call's sample is context in c's prompt, so the chain spans it.
  const session = () => {
    const a = capture([1, 2], [3, IM_END]);
    const gap = capture([1, 2, 3, IM_END, 4], [5, IM_END], {
      prompt_token_ids: null,
      response_token_ids: null,
    });
    const c = capture([1, 2, 3, IM_END, 4, 5, IM_END, 6], [7, IM_END]);
    const other = capture([90], [91]); // a chain that began after the gap, while another spans it: untouched
    return { a, gap, c, other, all: [other, a, gap, c] };
  };

  it("are counted per session and per trace, and mask the chain they fall in by default", () => {
    const { a, c, other, all } = session();
    const trajectory = built(all);
    expect(trajectory.reconstruction_stats).toMatchObject({ capture_gaps: 1, excluded_no_token_ids: 1 });
    const chain = trajectory.traces.find((t) => t.capture_ids.includes(a.capture_id));
    expect(chain?.capture_ids).toEqual([a.capture_id, c.capture_id]);
    expect(chain).toMatchObject({ capture_gaps: 1, metadata: { masked: "capture_gap" } });
    expect(chain?.loss_mask.every((m) => m === 0)).toBe(true);
    expect(chain?.response_logprobs?.every((x) => x === 0)).toBe(true);
    const untouched = trajectory.traces.find((t) => t.capture_ids.includes(other.capture_id));
    expect(untouched).toMatchObject({ capture_gaps: 0, loss_mask: [1] });
    expect(trajectory.reconstruction_stats.trainable_tokens).toBe(1);
  });

  it("keep trainable tokens with on_missing_ids: keep", () => {
    const { a, all } = session();
    const chain = built(all, { on_missing_ids: "keep" }).traces.find((t) =>
      t.capture_ids.includes(a.capture_id),
    );
    expect(chain?.capture_gaps).toBe(1);
    expect(chain?.loss_mask).toEqual([1, 1, 0, 0, 0, 0, 1, 1]);
  });

  it("fail the session with on_missing_ids: error, naming the capture", () => {
    const { gap, all } = session();
    expect(() => built(all, { on_missing_ids: "error" })).toThrow(CaptureGapError);
    expect(() => built(all, { on_missing_ids: "error" })).toThrow(gap.capture_id);
  });

  it("make the session ERROR through polar reconstruct's path with on_missing_ids: error", async () => {
    const store = new MemoryStore();
    const { gap, all } = session();
    for (const c of all) {
      const stored = { ...c, task_id: "gap-task", session_id: "s-1" };
      await store.put(keys.capture("gap-task", "s-1", c.capture_id), await encodeCapture(stored));
    }
    const task = {
      task_id: "gap-task",
      instruction: "x",
      agent: { harness: "shell" },
      builder: { strategy: "prefix_merging", config: { on_missing_ids: "error" } },
      submitted_at: "2026-01-01T00:00:00.000Z",
    };
    await store.put(keys.task("gap-task"), JSON.stringify(task));
    const { results } = await reconstructTask({ store, taskId: "gap-task" });
    expect(results[0]).toMatchObject({ status: "ERROR", trajectory: { status: "ERROR", traces: [] } });
    expect(results[0].error).toContain(gap.capture_id);
    expect(results[0].error).toContain("on_missing_ids is error");
  });

  it("mark the next call's trace with per_request", () => {
    const { c, all } = session();
    const out = perRequestBuilderWith({}).build(all);
    expect(out.stats.capture_gaps).toBe(1);
    expect(out.traces.find((t) => t.capture_ids[0] === c.capture_id)?.capture_gaps).toBe(1);
    checkInvariants(out.traces, all);
  });

  it("are configured strictly", () => {
    const one = [capture([1], [2])];
    expect(() => merge(one, { on_missing_ids: "skip" })).toThrow(
      /builder\.config\.on_missing_ids.*"mask", "error" or "keep"/,
    );
    expect(() => merge(one, { orphans: true })).toThrow(BuilderConfigError);
    expect(() => merge(one, { on_missing_id: "mask" })).toThrow(/unknown field "on_missing_id"/);
  });
});

describe("orphans", () => {
  // a1 -> a2 (retried: the harness sent its prompt again) -> a2' -> a3
  const session = () => {
    const a1 = capture([1, 2], [3, IM_END]);
    const a2 = capture([1, 2, 3, IM_END, 4], [50, 51, IM_END]);
    const retry = capture([1, 2, 3, IM_END, 4], [5, IM_END]);
    const a3 = capture([1, 2, 3, IM_END, 4, 5, IM_END, 6], [7, IM_END]);
    return { a1, a2, retry, a3, all: [a1, a2, retry, a3] };
  };

  it("tag a retried call, keep the chain whole with the retry, and mask the orphan", () => {
    const { a1, a2, retry, a3, all } = session();
    const { traces, reconstruction_stats: stats } = built(all);
    expect(traces.map((t) => t.capture_ids)).toEqual([
      [a1.capture_id, retry.capture_id, a3.capture_id],
      [a2.capture_id],
    ]);
    expect(traces[0]).toMatchObject({ orphan: false, break_reason: null, parent_trace: null });
    expect(traces[0].loss_mask).toEqual([1, 1, 0, 1, 1, 0, 1, 1]);
    expect(traces[1]).toMatchObject({
      orphan: true,
      orphan_reason: "retried",
      break_reason: "retry",
      parent_trace: 0,
      break_position: 5,
      loss_mask: [0, 0, 0],
      response_logprobs: [0, 0, 0],
      metadata: { masked: "orphan" },
    });
    expect(stats).toMatchObject({ orphans: 1, break_reasons: { retry: 1 }, trainable_tokens: 6 });
  });

  it("stay trainable with orphans: keep and leave the trajectory with orphans: drop", () => {
    const { a2, all } = session();
    const kept = built(all, { orphans: "keep" });
    expect(kept.traces[1]).toMatchObject({ orphan: true, loss_mask: [1, 1, 1], response_logprobs: lp(a2) });
    const dropped = built(all, { orphans: "drop" });
    expect(dropped.traces).toHaveLength(1);
    expect(dropped.traces.flatMap((t) => t.capture_ids)).not.toContain(a2.capture_id);
    expect(dropped.reconstruction_stats).toMatchObject({ orphans: 1, chains: 2 });
    expect(() => checkInvariants(dropped.traces, all)).toThrow(`capture ${a2.capture_id} is in no trace`);
  });

  it("tag a retried first call: the retry starts the chain that goes on", () => {
    const first = capture([1, 2], [60, IM_END]);
    const again = capture([1, 2], [3, IM_END]);
    const next = capture([1, 2, 3, IM_END, 4], [5, IM_END]);
    const { traces } = built([first, again, next]);
    expect(traces.map((t) => [t.capture_ids.length, t.orphan, t.orphan_reason, t.break_reason])).toEqual([
      [1, true, "retried", null],
      [2, false, null, "retry"],
    ]);
    expect(traces[1].parent_trace).toBe(0);
  });

  it("tag an auxiliary call (a title request nothing uses) but not a one-shot call whose answer comes back, nor the final answer", () => {
    const sys = { role: "system", content: "You are a coding agent." };
    const task = { role: "user", content: "fix the bug" };
    const tools = [{ type: "function", function: { name: "shell", parameters: {} } }];
    const m1 = capture([1, 2], [3, IM_END], { ...chat([sys, task], tools) });
    const title = capture([80, 81], [82, IM_END], {
      ...chat([{ role: "system", content: "Write a 3-word title." }, task]),
      ...answer("Bug fix session"),
    });
    const helper = capture([70, 71], [72, IM_END], {
      ...chat([
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "which file?" },
      ]),
      ...answer("main.py line 12"),
    });
    const m2 = capture([1, 2, 3, IM_END, 4], [5, IM_END], {
      ...chat(
        [
          sys,
          task,
          { role: "assistant", content: "x" },
          { role: "tool", content: "helper said: main.py line 12" },
        ],
        tools,
      ),
      ...answer("Done."),
    });
    const { traces, reconstruction_stats: stats } = built([m1, title, helper, m2]);
    const byCapture = (c: CaptureRecord) => traces.find((t) => t.capture_ids.includes(c.capture_id));
    expect(byCapture(title)).toMatchObject({
      orphan: true,
      orphan_reason: "auxiliary",
      break_reason: "sub_agent",
    });
    expect(byCapture(helper)).toMatchObject({ orphan: false, break_reason: "sub_agent" });
    expect(byCapture(m2)).toMatchObject({ orphan: false });
    expect(stats.orphans).toBe(1);
  });
});

describe("a system prompt that changes mid-session", () => {
  it("leaves the turn sampled after the change trainable: it carries the main conversation on, it is no side call", () => {
    const task = { role: "user", content: "fix the bug" };
    const m1 = capture([1, 2], [3, IM_END], { ...chat([{ role: "system", content: "Plan mode." }, task]) });
    const m2 = capture([1, 2, 3, IM_END, 4], [5, IM_END], {
      ...chat([
        { role: "system", content: "Plan mode." },
        task,
        { role: "assistant", content: "plan" },
        { role: "user", content: "go" },
      ]),
    });
    // The harness switched its system prompt (a mode change): the prompt no longer extends m2's ids.
    const m3 = capture([9, 1, 2, 3, IM_END, 4, 5, IM_END, 6], [7, IM_END], {
      ...chat([
        { role: "system", content: "Act mode." },
        task,
        { role: "assistant", content: "plan" },
        { role: "user", content: "go" },
        { role: "assistant", content: "step" },
        { role: "user", content: "next" },
      ]),
      ...answer("All done."),
    });
    const { traces, reconstruction_stats: stats } = built([m1, m2, m3]);
    const last = traces.find((t) => t.capture_ids.includes(m3.capture_id));
    expect(last).toMatchObject({ orphan: false, orphan_reason: null });
    expect(last?.loss_mask.filter((m) => m === 1)).toHaveLength(2);
    expect(stats.orphans).toBe(0);
  });
});

describe("policy versions per turn", () => {
  it("give each sampled turn a span with its start and end versions, and flag a trace that crossed a weight update", () => {
    const a = capture([1, 2], [3, 4, IM_END], { policy_version: "7", policy_version_end: "8" });
    const b = capture([1, 2, 3, 4, IM_END, 9], [5, IM_END], { policy_version: "8", policy_version_end: "8" });
    const steady = capture([40], [41], { policy_version: "8", policy_version_end: "8" });
    const { traces } = built([a, b, steady]);
    expect(traces[0].version_spans).toEqual([
      { start: 0, end: 3, version_start: "7", version_end: "8" },
      { start: 4, end: 6, version_start: "8", version_end: "8" },
    ]);
    expect(traces[0].crossed_weight_update).toBe(true);
    expect(traces[1]).toMatchObject({ crossed_weight_update: false, version_spans: [{ start: 0, end: 1 }] });
  });

  it("are checked against the captures", () => {
    const a = capture([1], [2, 3], { policy_version: "1", policy_version_end: "2" });
    const good = () => structuredClone(merge([a]).traces);
    const moved = good();
    moved[0].version_spans[0].end = 1;
    expect(() => checkInvariants(moved, [a])).toThrow(/version span 0 is \[0, 1\)/);
    const flag = good();
    flag[0].crossed_weight_update = false;
    expect(() => checkInvariants(flag, [a])).toThrow(InvariantViolation);
    const masked = good();
    masked[0].loss_mask = [0, 0]; // neither an orphan nor a gap: masking it would hide sampled tokens
    expect(() => checkInvariants(masked, [a])).toThrow(/sampled but has mask 0/);
  });
});

describe("chain break reasons", () => {
  const sys = { role: "system", content: "You are an agent." };
  const task = { role: "user", content: "list the files, then read a.txt" };

  it("compaction: the history is replaced by a shorter summary", () => {
    const long = [sys, task, { role: "assistant", content: "ls" }, { role: "tool", content: "a.txt b.txt" }];
    const a = capture([1, 2, 3, 4, 5, 6], [7, IM_END], chat(long));
    const compacted = capture(
      [1, 2, 30],
      [31, IM_END],
      chat([sys, { role: "user", content: "Summary: listed files." }]),
    );
    const { traces, reconstruction_stats: stats } = built([a, compacted]);
    expect(traces[1]).toMatchObject({ break_reason: "compaction", parent_trace: 0, break_position: 2 });
    expect(traces[1].break_context_ids).toEqual([1, 2, 30]);
    expect(stats.break_reasons).toEqual({ compaction: 1 });
  });

  it("compaction: a summary after the task's own message, in a longer prompt (Codex)", () => {
    const summaryText = "Summary of a polar-script conversation. The steps left: read a.txt, then answer.";
    const a = capture([1, 2, 3], [4, IM_END], chat([sys, task]));
    const b = capture(
      [1, 2, 3, 4, IM_END, 5],
      [6, IM_END],
      chat([sys, task, { role: "tool", content: "a.txt" }]),
    );
    // The summary request renders differently (no tools), so it is a chain of its own.
    const request = capture([1, 40, 3, 4, IM_END, 5, 6, IM_END, 41], [42, IM_END], {
      ...chat([sys, task, { role: "user", content: "CONTEXT CHECKPOINT COMPACTION" }]),
      ...answer(`<analysis>one turn done</analysis>\n<summary>\n${summaryText}\n</summary>`),
    });
    const carried = {
      role: "user",
      content: `Another language model started to solve this problem.\n${summaryText}`,
    };
    const compacted = capture(
      [1, 2, 3, 60, 61, 62, 63, 64, 65, 66],
      [67, IM_END],
      chat([sys, task, carried]),
    );
    const { traces } = built([a, b, request, compacted]);
    const main = traces.findIndex((t) => t.capture_ids.includes(a.capture_id));
    const next = traces.find((t) => t.capture_ids.includes(compacted.capture_id));
    expect(next).toMatchObject({ break_reason: "compaction", parent_trace: main });
  });

  it("history_rewrite: the system prompt's per-request line changed, the conversation goes on", () => {
    const a = capture([1, 2, 3], [7, IM_END], chat([{ role: "system", content: "Date: Monday" }, task]));
    const b = capture([1, 9, 3, 7, IM_END, 8], [10, IM_END], {
      ...chat([
        { role: "system", content: "Date: Tuesday" },
        task,
        { role: "assistant", content: "x" },
        { role: "tool", content: "y" },
      ]),
    });
    const { traces } = built([a, b]);
    expect(traces[1]).toMatchObject({ break_reason: "history_rewrite", parent_trace: 0, break_position: 1 });
  });

  it("sub_agent: another system prompt and a conversation of its own", () => {
    const a = capture([1, 2, 3], [7, IM_END], chat([sys, task]));
    const explore = [
      { role: "system", content: "You explore." },
      { role: "user", content: "find a.txt" },
    ];
    const sub = capture([1, 50, 51], [52, IM_END], chat(explore));
    const a2 = capture(
      [1, 2, 3, 7, IM_END, 8],
      [9, IM_END],
      chat([sys, task, { role: "assistant", content: "x" }]),
    );
    const sub2 = capture(
      [1, 50, 51, 52, IM_END, 53],
      [54, IM_END],
      chat([...explore, { role: "assistant", content: "y" }]),
    );
    const { traces } = built([a, sub, a2, sub2]);
    expect(traces.map((t) => t.capture_ids.length)).toEqual([2, 2]);
    expect(traces[1]).toMatchObject({ break_reason: "sub_agent", parent_trace: 0, orphan: false });
  });

  it("length_cut: the previous answer was cut and re-rendered", () => {
    const a = capture([1, 2], [3, 4], { finish_reason: "length" });
    const b = capture([1, 2, 3, 99, IM_END, 5], [6, IM_END]);
    expect(built([a, b]).traces[1]).toMatchObject({ break_reason: "length_cut", break_position: 3 });
  });

  it("template_drift: a dropped think block, rendered by the real Qwen3 template", () => {
    const q = loadQwen3();
    const tools = [
      { type: "function", function: { name: "shell", description: "Run", parameters: { type: "object" } } },
    ];
    const first: Message[] = [sys, task];
    const promptA = q.encode(q.renderChat(first, { tools }));
    const sampled = `<think>\nI should list the files.\n</think>\n\nListing.<|im_end|>`;
    const responseA = q.encode(sampled);
    const a = capture(promptA, responseA, chat(first, tools));
    // The harness sends the answer back without its reasoning: the template renders no think block
    // (a tool result, unlike a new user message, would not have made Qwen3 drop it).
    const second: Message[] = [
      ...first,
      { role: "assistant", content: "Listing." },
      { role: "tool", content: "a.txt" },
    ];
    const promptB = q.encode(q.renderChat(second, { tools }));
    const b = capture(promptB, q.encode("Done.<|im_end|>"), chat(second, tools));
    const { traces } = built([a, b]);
    expect(traces).toHaveLength(2);
    expect(traces[1]).toMatchObject({ break_reason: "template_drift", parent_trace: 0 });
    const at = traces[1].break_position as number;
    expect(at).toBeGreaterThanOrEqual(promptA.length);
    expect(
      q.decode(responseA.slice(at - promptA.length, at - promptA.length + 1), { skipSpecialTokens: false }),
    ).toBe("<think>");
  });

  it("out_of_order: a fork whose prompt holds a sample its capture id says came later", () => {
    const id = (n: number) => ({ capture_id: `01JOOO00000000000000000${n}` });
    const p1 = capture([1], [2], id(1));
    const x = capture([1, 2, 3], [4], id(7));
    const y = capture([1, 2, 3, 4, 5], [6], id(8));
    const fork = capture([1, 2, 3, 4, 9, 9], [10], id(6)); // continues x's sample, minted "before" it
    const { traces } = built([p1, x, y, fork]);
    expect(traces.map((t) => t.capture_ids)).toEqual([
      [p1.capture_id, x.capture_id, y.capture_id],
      [fork.capture_id],
    ]);
    expect(traces[1]).toMatchObject({ break_reason: "out_of_order", parent_trace: 0, break_position: 4 });
  });

  it("unknown: neither the token ids nor a chat request explain it", () => {
    const a = capture([1, 2], [3]);
    const unrelated = capture([60, 61], [62]);
    const { traces } = built([a, unrelated]);
    expect(traces[1]).toMatchObject({ break_reason: "unknown", parent_trace: 0, break_position: 0 });
  });
});

describe("capture order", () => {
  it("does not split a chain whose capture ids are out of call order (two proxy clocks)", () => {
    const a = capture([1, 2], [3, IM_END], { capture_id: "01JZZ0000000000000000000C" });
    const b = capture([1, 2, 3, IM_END, 4], [5, IM_END], { capture_id: "01JZZ0000000000000000000A" });
    const c = capture([1, 2, 3, IM_END, 4, 5, IM_END, 6], [7, IM_END], {
      capture_id: "01JZZ0000000000000000000B",
    });
    const { traces, reconstruction_stats: stats } = built([a, b, c]);
    expect(traces.map((t) => t.capture_ids)).toEqual([[a.capture_id, b.capture_id, c.capture_id]]);
    expect(stats).toMatchObject({ chains: 1, prefix_breaks: 0, break_reasons: {} });
    expect(traces[0].loss_mask).toEqual([1, 1, 0, 1, 1, 0, 1, 1]);
  });
});

describe("parallel tool calls", () => {
  it("mark a turn whose sampled ids hold more calls than the engine returned to a client that disabled them", () => {
    const calls = [TOOL_CALL, 20, 151658, NL, TOOL_CALL, 21, 151658, IM_END];
    const a = capture([1, 2], calls, {
      parallel_tool_calls_disabled: true,
      response: { choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "c1" }] } }] },
    });
    const b = capture([1, 2, ...calls, 9], [TOOL_CALL, 22, 151658, IM_END], {
      parallel_tool_calls_disabled: true,
    });
    const allowed = capture([50], calls);
    const { traces } = built([a, b, allowed]);
    expect(traces[0].metadata.filtered_tool_calls).toEqual([{ turn: 0, sampled: 2, returned: 1 }]);
    expect(traces[1].metadata.filtered_tool_calls).toBeUndefined();
  });
});

describe("older results", () => {
  it("parse with the new trace and statistics fields at their defaults", () => {
    const old = {
      status: "COMPLETED",
      traces: [
        {
          prompt_ids: [1],
          response_ids: [2],
          loss_mask: [1],
          response_logprobs: [-0.5],
          reward: 1,
          finish_reason: "stop",
          capture_ids: ["c1"],
        },
      ],
      builder: "prefix_merging",
      reconstruction_stats: {
        captures: 1,
        excluded_no_token_ids: 0,
        excluded_failed: 0,
        chains: 1,
        prefix_breaks: 0,
        trainable_tokens: 1,
        context_tokens: 1,
      },
      error: null,
    };
    const parsed = Trajectory.parse(old);
    expect(parsed.traces[0]).toMatchObject({
      orphan: false,
      orphan_reason: null,
      break_reason: null,
      parent_trace: null,
      break_position: null,
      break_context_ids: null,
      version_spans: [],
      crossed_weight_update: false,
      capture_gaps: 0,
    });
    expect(parsed.reconstruction_stats).toMatchObject({ capture_gaps: 0, orphans: 0, break_reasons: {} });
  });
});
