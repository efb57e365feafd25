import { engineImages } from "../../shared/images/image-refs.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { BadResult, LoadedResult } from "./store-view.ts";

/** At most this many distinct reward values get a bar each; more are put in equal-width bins. */
const MAX_DISTINCT_BARS = 12;
const BINS = 10;

export interface HistogramBar {
  label: string;
  count: number;
}

/** Rewards of one group: a bar per value when few (the usual 0/1), else equal-width bins; null is "none". */
export function rewardHistogram(rewards: readonly (number | null)[]): HistogramBar[] {
  const values = rewards.filter((r): r is number => r !== null);
  const none = rewards.length - values.length;
  const bars: HistogramBar[] = [];
  const distinct = [...new Set(values)].sort((a, b) => a - b);
  if (distinct.length <= MAX_DISTINCT_BARS) {
    for (const v of distinct) bars.push({ label: String(v), count: values.filter((x) => x === v).length });
  } else {
    const min = distinct[0] as number;
    const max = distinct[distinct.length - 1] as number;
    const width = (max - min) / BINS;
    const counts = new Array<number>(BINS).fill(0);
    for (const v of values) counts[Math.min(BINS - 1, Math.floor((v - min) / width))]++;
    counts.forEach((count, i) => {
      bars.push({ label: `${fmt(min + i * width)}..${fmt(min + (i + 1) * width)}`, count });
    });
  }
  if (none > 0) bars.push({ label: "none", count: none });
  return bars;
}

const fmt = (x: number) => String(Number(x.toPrecision(3)));

export function sessionRow(l: LoadedResult) {
  const r = l.result;
  const traces = r.trajectory.traces;
  return {
    session_id: r.session_id,
    sample_index: r.sample_index,
    attempt: r.attempt,
    status: r.status,
    reward: r.reward,
    // Its first trace's version (the oldest of that chain): what the reward-by-version view plots.
    policy_version: traces.find((t) => t.policy_version != null)?.policy_version ?? null,
    timings: r.timings,
    traces: traces.length,
    tokens: traces.reduce((n, t) => n + t.prompt_ids.length + t.response_ids.length, 0),
    trainable: traces.reduce((n, t) => n + t.loss_mask.reduce<number>((a, m) => a + m, 0), 0),
    breaks: l.traceExtras.filter((e) => e.break_reason != null).length,
    orphans: l.traceExtras.filter((e) => e.orphan === true).length,
    error: r.error,
  };
}

export function taskSummary(taskId: string, results: LoadedResult[], bad: BadResult[]) {
  const statuses: Record<string, number> = {};
  for (const l of results) statuses[l.result.status] = (statuses[l.result.status] ?? 0) + 1;
  const rewards = results.map((l) => l.result.reward);
  const known = rewards.filter((r): r is number => r !== null);
  return {
    task_id: taskId,
    sessions: results.map(sessionRow),
    statuses,
    mean_reward: known.length ? known.reduce((a, b) => a + b, 0) / known.length : null,
    histogram: rewardHistogram(rewards),
    bad,
  };
}

export function traceRow(l: LoadedResult, i: number) {
  const t = l.result.trajectory.traces[i];
  const e = l.traceExtras[i] ?? {};
  if (!t) throw new RangeError(`trace ${i}`);
  return {
    index: i,
    prompt: t.prompt_ids.length,
    response: t.response_ids.length,
    trainable: t.loss_mask.reduce<number>((a, m) => a + m, 0),
    // As in the shard: a trace's own reward, else the session's.
    reward: t.reward ?? l.result.reward,
    finish_reason: t.finish_reason,
    policy_version: t.policy_version,
    captures: t.capture_ids.length,
    images: t.image_hashes.length,
    ...e,
  };
}

/** One capture as the session page lists it; which trace took it, if any. */
export function captureRow(c: CaptureRecord, l: LoadedResult | null) {
  const started = Date.parse(c.started_at);
  const ended = Date.parse(c.ended_at);
  const trace = l ? l.result.trajectory.traces.findIndex((t) => t.capture_ids.includes(c.capture_id)) : -1;
  return {
    capture_id: c.capture_id,
    attempt: c.attempt,
    started_at: c.started_at,
    latency_ms: Number.isFinite(ended - started) ? ended - started : null,
    provider: c.provider,
    path: c.path,
    stream: c.stream,
    model_requested: c.model_requested,
    model_served: c.model_served,
    prompt_tokens: c.prompt_token_ids?.length ?? c.usage?.prompt_tokens ?? null,
    completion_tokens: c.response_token_ids?.length ?? c.usage?.completion_tokens ?? null,
    token_ids: c.prompt_token_ids !== null && c.response_token_ids !== null,
    finish_reason: c.finish_reason,
    policy_version: c.policy_version,
    policy_version_end: c.policy_version_end,
    sampling: c.sampling,
    error: c.error,
    trace: trace >= 0 ? trace : null,
    /** The images the engine was given on this call, in order: the last is the turn's newest screenshot. */
    images: engineImages(c).map((r) => r.sha256),
  };
}
