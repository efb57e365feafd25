import { traceTurns } from "../batch-runner/evaluation/trace-turns.ts";
import type { ShardRow } from "../batch-runner/shards/shard-rows.ts";
import { qwen3ChatTokenIds } from "../shared/node/qwen3/chat-segments.ts";
import { type ChatTokenizer, chatTrace, type ToolCall } from "./atif-chat-steps.ts";
import { imagesOfRows } from "./atif-images.ts";

/**
 * ATIF v1.5 (Harbor's Agent Trajectory Interchange Format, RFC 0001-trajectory-format) from shard
 * rows: one trajectory per session. With a tokenizer (`chat`), each trace reads as its chat
 * (atif-chat-steps.ts): system, user and agent steps in plain text, tool calls as `tool_calls`
 * with their results as the observation. Without one, each trace opens with an empty `user` step
 * and each run of sampled (mask 1) tokens is an `agent` step. Either way a sampled turn's step
 * carries in `metrics` the exact `prompt_token_ids` the engine saw for it (the trace prompt plus
 * the response before the turn), its `completion_token_ids` and `logprobs`. Polar's own fields
 * (trace index, orphan, break reason, reward) go in `extra`; so do the traces' images
 * (`extra.polar.images`: trace index and sha256, in engine order; atif-images.ts).
 */
export const ATIF_SCHEMA_VERSION = "ATIF-v1.5";

export interface AtifMetrics {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_token_ids: number[];
  completion_token_ids: number[];
  logprobs?: number[];
}

export interface AtifStep {
  step_id: number;
  source: "system" | "user" | "agent";
  message: string;
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  observation?: { results: { source_call_id?: string; content: string }[] };
  is_copied_context?: boolean;
  metrics?: AtifMetrics;
  extra?: Record<string, unknown>;
}

export interface AtifTrajectory {
  schema_version: typeof ATIF_SCHEMA_VERSION;
  session_id: string;
  agent: {
    name: string;
    version: string;
    model_name?: string;
    tool_definitions?: Record<string, unknown>[];
    extra?: Record<string, unknown>;
  };
  steps: AtifStep[];
  final_metrics: {
    total_prompt_tokens: number;
    total_completion_tokens: number;
    total_steps: number;
    extra: Record<string, unknown>;
  };
  extra: Record<string, unknown>;
}

export interface AtifOptions {
  agentName: string;
  agentVersion: string;
  modelName?: string;
  /** The Qwen3 tokenizer, to read traces as chats; without it messages are empty strings (ATIF allows that). */
  chat?: ChatTokenizer;
}

/** The engine-faithfulness columns, absent from shards written before them (then their defaults). */
type FaithfulnessColumns = Partial<
  Pick<
    ShardRow,
    | "orphan"
    | "orphan_reason"
    | "break_reason"
    | "parent_trace"
    | "crossed_weight_update"
    | "capture_gaps"
    | "policy_version_end"
  >
>;

/** Maximal runs of equal mask values: [start, end, value]. */
export function maskRuns(mask: readonly number[]): [number, number, number][] {
  const runs: [number, number, number][] = [];
  let start = 0;
  for (let i = 1; i <= mask.length; i++) {
    if (i === mask.length || mask[i] !== mask[start]) {
      runs.push([start, i, mask[start]]);
      start = i;
    }
  }
  return runs;
}

export function toAtif(rows: readonly ShardRow[], opts: AtifOptions): AtifTrajectory[] {
  const bySession = new Map<string, ShardRow[]>();
  for (const row of rows) {
    const list = bySession.get(row.session_id) ?? [];
    list.push(row);
    bySession.set(row.session_id, list);
  }
  return [...bySession.values()].map((traces) =>
    sessionTrajectory(
      [...traces].sort((a, b) => a.trace_index - b.trace_index),
      opts,
    ),
  );
}

function sessionTrajectory(traces: ShardRow[], opts: AtifOptions): AtifTrajectory {
  const steps: AtifStep[] = [];
  let promptTotal = 0;
  let completionTotal = 0;
  let toolDefinitions: Record<string, unknown>[] | null = null;
  const chat = opts.chat
    ? { tk: opts.chat, sp: qwen3ChatTokenIds(opts.chat), cache: new Map<number, string | null>() }
    : null;
  const turnMetrics = (row: ShardRow, start: number, end: number): AtifMetrics => {
    const prompt = [...row.prompt_ids, ...row.response_ids.slice(0, start)];
    const ids = row.response_ids.slice(start, end);
    const metrics: AtifMetrics = {
      prompt_tokens: prompt.length,
      completion_tokens: ids.length,
      prompt_token_ids: prompt,
      completion_token_ids: ids,
    };
    if (row.response_logprobs) metrics.logprobs = row.response_logprobs.slice(start, end);
    promptTotal += prompt.length;
    completionTotal += ids.length;
    return metrics;
  };
  for (const row of traces) {
    const flags: FaithfulnessColumns = row;
    const polar = {
      trace_index: row.trace_index,
      orphan: flags.orphan ?? false,
      orphan_reason: flags.orphan_reason ?? null,
      break_reason: flags.break_reason ?? null,
      parent_trace: flags.parent_trace ?? null,
      crossed_weight_update: flags.crossed_weight_update ?? false,
      capture_gaps: flags.capture_gaps ?? 0,
      policy_version: row.policy_version,
      policy_version_end: flags.policy_version_end ?? null,
    };
    if (chat) {
      const spans = JSON.parse(row.version_spans ?? "[]") as { start: number; end: number }[];
      const turns = traceTurns({ version_spans: spans as never, loss_mask: row.loss_mask as (0 | 1)[] });
      const read = chatTrace(row, turns, chat.sp, chat.tk, chat.cache);
      toolDefinitions ??= read.toolDefinitions;
      for (const s of read.steps) {
        const kind = s.turn
          ? "sampled"
          : s.is_copied_context
            ? "context"
            : s.position < row.prompt_ids.length
              ? "prompt"
              : "inserted";
        steps.push({
          step_id: steps.length + 1,
          source: s.source,
          message: s.message,
          ...(s.reasoning_content !== undefined ? { reasoning_content: s.reasoning_content } : {}),
          ...(s.tool_calls ? { tool_calls: s.tool_calls } : {}),
          ...(s.observation ? { observation: s.observation } : {}),
          ...(s.is_copied_context ? { is_copied_context: true } : {}),
          ...(s.turn ? { metrics: turnMetrics(row, s.turn.start, s.turn.end) } : {}),
          extra: { polar: { ...polar, kind, ...(s.turn ? { response_start: s.turn.start } : {}) } },
        });
      }
      continue;
    }
    steps.push({
      step_id: steps.length + 1,
      source: "user",
      message: "",
      extra: { polar: { ...polar, kind: "trace_prompt" } },
    });
    let lastAgent: AtifStep | null = null;
    for (const [start, end, value] of maskRuns(row.loss_mask)) {
      const ids = row.response_ids.slice(start, end);
      if (value === 0) {
        const content = { content: "" };
        if (lastAgent) lastAgent.observation = { results: [content] };
        else
          steps.push({
            step_id: steps.length + 1,
            source: "user",
            message: content.content,
            extra: { polar: { ...polar, kind: "inserted", response_start: start, token_ids: ids } },
          });
        continue;
      }
      lastAgent = {
        step_id: steps.length + 1,
        source: "agent",
        message: "",
        metrics: turnMetrics(row, start, end),
        extra: { polar: { ...polar, response_start: start } },
      };
      steps.push(lastAgent);
    }
  }
  const first = traces[0];
  const images = imagesOfRows(traces);
  return {
    schema_version: ATIF_SCHEMA_VERSION,
    session_id: first.session_id,
    agent: {
      name: opts.agentName,
      version: opts.agentVersion,
      ...(opts.modelName ? { model_name: opts.modelName } : {}),
      ...(toolDefinitions ? { tool_definitions: toolDefinitions } : {}),
    },
    steps,
    final_metrics: {
      total_prompt_tokens: promptTotal,
      total_completion_tokens: completionTotal,
      total_steps: steps.length,
      extra: { reward: first.reward, status: first.status },
    },
    extra: {
      polar: {
        task_id: first.task_id,
        group_id: first.group_id,
        sample_index: first.sample_index,
        status: first.status,
        reward: first.reward,
        finish_reason: traces[traces.length - 1].finish_reason,
        traces: traces.length,
        // Images have no place in ATIF v1.5 messages: listed here, files written by `--out`.
        ...(images.length > 0 ? { images } : {}),
      },
    },
  };
}
