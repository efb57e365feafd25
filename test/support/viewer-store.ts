import { keys } from "../../shared/keys.ts";
import { loadQwen3, type Qwen3 } from "../../shared/node/qwen3/qwen3.ts";
import type { SessionResult, Trace } from "../../shared/schemas/trajectory.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";

/**
 * Hand-built results for the viewer and `polar inspect` tests, written beside what `polar run`
 * made: a task whose rewards spread over several values, a session whose traces carry the
 * chain-break, orphan, gap and policy-version fields (the engine-faithfulness names), and a
 * 400-turn trace. Token streams are real Qwen3 encodings of a chat, built turn by turn so each
 * token's mask is known.
 */

export const SPREAD_TASK = "viewer-rewards";
/** Rewards of SPREAD_TASK's sessions, by sample index. */
export const SPREAD_REWARDS: (number | null)[] = [0, 0.5, 1, 1, null];
export const BREAK_TASK = "viewer-breaks";
export const BREAK_SESSION = "viewer-breaks-0";
export const LONG_TASK = "viewer-long";
export const LONG_SESSION = "viewer-long-0";
export const LONG_TURNS = 400;

const SYSTEM = [
  "You are a coding agent. Literal markers such as [[this]] and ⟦that⟧ appear in this prompt",
  "and must not be confused with trainable spans.",
  ...Array.from(
    { length: 40 },
    (_, i) => `Rule ${i + 1}: keep the work directory tidy and report what you did.`,
  ),
].join("\n");

const TOOLS = [
  {
    type: "function",
    function: {
      name: "bash",
      description: "Run a shell command",
      parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    },
  },
];

interface Built {
  prompt: number[];
  response: number[];
  mask: (0 | 1)[];
  logprobs: number[];
}

/** A chat of `turns` tool calls: prompt = system + user + generation prompt, the rest response. */
export function buildChat(q: Qwen3, turns: number, user = "List the files, one directory at a time."): Built {
  const prompt = q.encode(
    q.renderChat(
      [
        { role: "system", content: SYSTEM },
        { role: "user", content: user },
      ],
      { tools: TOOLS },
    ),
  );
  const b: Built = { prompt, response: [], mask: [], logprobs: [] };
  const add = (ids: number[], m: 0 | 1) => {
    for (const id of ids) {
      b.response.push(id);
      b.mask.push(m);
      // Deterministic spread of logprobs, so the shading has something to show.
      b.logprobs.push(m === 1 ? -((id * 7919) % 1000) / 400 : 0);
    }
  };
  for (let i = 0; i < turns; i++) {
    add(
      [
        ...q.encode(`<tool_call>\n{"name": "bash", "arguments": {"command": "ls dir${i}"}}\n</tool_call>`),
        q.imEndId,
      ],
      1,
    );
    add(
      q.encode(
        `\n<|im_start|>user\n<tool_response>\n${listing(i)}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
      ),
      0,
    );
  }
  add([...q.encode("Done: every directory listed."), q.imEndId], 1);
  return b;
}

/** What `ls -l dirN` printed: twenty lines, so a turn weighs like a real tool result. */
function listing(i: number): string {
  return Array.from(
    { length: 20 },
    (_, j) => `-rw-r--r-- 1 agent agent ${(i * 131 + j * 17) % 9000} Jan  1 00:00 file-${i}-${j}.txt`,
  ).join("\n");
}

/**
 * A trace with the engine-faithfulness fields at their defaults unless `extra` sets them. Built
 * untyped and cast: the fields are written whether or not this checkout's Trace schema has them.
 */
function trace(b: Built, extra: Record<string, unknown> = {}): Trace {
  const t: Record<string, unknown> = {
    prompt_ids: b.prompt,
    response_ids: b.response,
    loss_mask: b.mask,
    response_logprobs: b.logprobs,
    reward: null,
    finish_reason: "stop",
    capture_ids: [],
    policy_version: "v7",
    metadata: {},
    orphan: false,
    orphan_reason: null,
    break_reason: null,
    parent_trace: null,
    break_position: null,
    break_context_ids: null,
    version_spans: [],
    crossed_weight_update: false,
    capture_gaps: 0,
    ...extra,
  };
  return t as unknown as Trace;
}

function result(
  taskId: string,
  sampleIndex: number,
  traces: Trace[],
  over: Partial<SessionResult> = {},
): SessionResult {
  const trainable = traces.reduce((n, t) => n + t.loss_mask.reduce<number>((a, m) => a + m, 0), 0);
  const total = traces.reduce((n, t) => n + t.prompt_ids.length + t.response_ids.length, 0);
  return {
    v: 1,
    task_id: taskId,
    session_id: `${taskId}-${sampleIndex}`,
    sample_index: sampleIndex,
    attempt: 0,
    status: "COMPLETED",
    reward: 1,
    timings: {
      queued_at: "2026-01-01T00:00:00.000Z",
      init_ms: 120 + 30 * sampleIndex,
      ready_wait_ms: 40 * sampleIndex,
      run_ms: 2000 + 250 * sampleIndex,
      postrun_ms: 300,
      finished_at: new Date(Date.parse("2026-01-01T00:00:03.000Z") + 400 * sampleIndex).toISOString(),
    },
    agent: { exit_code: 0, timed_out: false, final_answer: `answer of sample ${sampleIndex}` },
    evaluation: { evaluator: "hand_built", outcome_reward: 1, metadata: { checked: true } },
    trajectory: {
      status: "COMPLETED",
      traces,
      builder: "prefix_merging",
      reconstruction_stats: {
        captures: traces.length,
        excluded_no_token_ids: 0,
        excluded_failed: 0,
        chains: traces.length,
        prefix_breaks: Math.max(0, traces.length - 1),
        trainable_tokens: trainable,
        context_tokens: total - trainable,
        ...{ capture_gaps: 0, orphans: 0, break_reasons: {} },
      },
      error: null,
    },
    error: null,
    ...over,
  };
}

async function putResult(store: ObjectStore, r: SessionResult): Promise<void> {
  await store.put(keys.result(r.task_id, r.session_id), JSON.stringify(r));
}

/** The break session's traces: 0 a plain chain, 1 a compaction break from 0, 2 an orphan with gaps. */
export function breakTraces(q: Qwen3) {
  const first = buildChat(q, 3);
  const compacted = buildChat(q, 2, "Summary of earlier work: dir0..dir2 listed. Continue with the rest.");
  const parentSeq = [...first.prompt, ...first.response];
  let position = 0;
  while (parentSeq[position] === compacted.prompt[position]) position++;
  const orphan = buildChat(q, 1, "A call no chain explains.");
  return {
    position,
    traces: [
      trace(first, {
        version_spans: [{ start: 0, end: first.response.length, version_start: "v7", version_end: "v7" }],
      }),
      trace(compacted, {
        break_reason: "compaction",
        parent_trace: 0,
        break_position: position,
        break_context_ids: compacted.prompt.slice(Math.max(0, position - 4), position + 4),
        crossed_weight_update: true,
        version_spans: [
          { start: 0, end: 20, version_start: "v7", version_end: "v7" },
          { start: 20, end: compacted.response.length, version_start: "v8", version_end: "v8" },
        ],
      }),
      trace(orphan, {
        orphan: true,
        orphan_reason: "no_prefix_match",
        capture_gaps: 2,
        break_reason: "unknown",
      }),
    ],
  };
}

/** Writes the three hand-built tasks into `store`. Returns the long trace's mask sum. */
export async function writeViewerFixtures(
  store: ObjectStore,
): Promise<{ longTrainable: number; breakPosition: number }> {
  const q = loadQwen3();
  const small = buildChat(q, 1);
  for (const [i, reward] of SPREAD_REWARDS.entries()) {
    const status = reward === null ? "ERROR" : "COMPLETED";
    await putResult(
      store,
      result(SPREAD_TASK, i, [trace(small)], {
        reward,
        status,
        error: reward === null ? "hand-built: harness crashed" : null,
      }),
    );
  }
  const b = breakTraces(q);
  const withBreaks = result(BREAK_TASK, 0, b.traces, {
    artifacts: [`${keys.artifactsOfAttempt(BREAK_TASK, BREAK_SESSION, 0)}notes.txt`],
  });
  Object.assign(withBreaks.trajectory.reconstruction_stats, {
    capture_gaps: 2,
    orphans: 1,
    break_reasons: { compaction: 1, unknown: 1 },
  });
  await putResult(store, withBreaks);
  await store.put(
    `${keys.artifactsOfAttempt(BREAK_TASK, BREAK_SESSION, 0)}notes.txt`,
    "<b>kept</b> artifact text\n",
  );
  const long = buildChat(q, LONG_TURNS);
  await putResult(store, result(LONG_TASK, 0, [trace(long)]));
  return { longTrainable: long.mask.reduce<number>((a, m) => a + m, 0), breakPosition: b.position };
}
