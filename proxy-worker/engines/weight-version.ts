/**
 * vLLM's RL endpoints (server started with VLLM_SERVER_DEV_MODE=1) report the weights an engine
 * serves at `GET /weight_info` (`{"weight_version": "..."}`; the trainer sets it with
 * `/update_weight_version` or `/finish_weight_update`). Read on the replica that serves a call,
 * right before the call is sent and right after its answer ends, it names the version that sampled
 * the call without the trainer also telling the proxy, and a call that spanned a weight update
 * shows both versions. An engine without the route (it answers 404, or without a version) is asked
 * again only after a minute, so it costs one GET per minute per replica; a read that timed out or
 * failed is not taken for a missing route.
 */
import { getJson, type Upstream } from "../upstream.ts";

const RECHECK_MS = 60_000;
/**
 * A version read waits at most this long; past it the call goes on without the engine's word.
 * vLLM answers from the same API process that streams tokens: on 2 loaded CPU cores it took over
 * 5 s at times, and a capture then named no version (the RL lane under load lost versions that
 * way). A dead engine fails the call anyway; a slow one is worth waiting for.
 */
const READ_TIMEOUT_MS = 15_000;
/**
 * The wait when the trainer has named the version too (docs/engines.md "Versions under load"): a
 * read that misses then costs only the capture's source label, while every wait holds the call
 * back from the engine (twice per call), long enough to cost a session its time limit.
 */
const READ_TIMEOUT_WITH_TRAINER_MS = 2_000;

export interface EngineVersionSpan {
  start: string;
  end: string;
}

/**
 * One read of `/weight_info`: the version (null: the engine does not report one, or is not asked),
 * or why the engine did not say (a timeout, a 5xx, a refused connection).
 */
export type EngineVersionRead = { ok: true; version: string | null } | { ok: false; why: string };

/** What a call's two reads name: both versions, or neither and why (`failure` null: not reported). */
export interface EngineVersionOutcome {
  span: EngineVersionSpan | null;
  failure: string | null;
}

export class EngineVersions {
  private readonly absentUntil = new WeakMap<Upstream, number>();
  readonly enabled: boolean;
  private readonly clock: () => number;
  private readonly timeoutMs: number;
  private readonly trainerNamedIt: () => boolean;

  /** `trainerNamedIt`: whether the trainer has set the version through the control API (a fallback exists). */
  constructor(
    enabled: boolean,
    clock: () => number = Date.now,
    timeoutMs = READ_TIMEOUT_MS,
    trainerNamedIt: () => boolean = () => false,
  ) {
    this.enabled = enabled;
    this.clock = clock;
    this.timeoutMs = timeoutMs;
    this.trainerNamedIt = trainerNamedIt;
  }

  /** The version the engine serves now; null when it does not say (or is not asked); or why the read failed. */
  async read(up: Upstream): Promise<EngineVersionRead> {
    if (!this.enabled) return { ok: true, version: null };
    const until = this.absentUntil.get(up);
    if (until !== undefined && this.clock() < until) return { ok: true, version: null };
    // Quiet: an engine without the route is the common case, not a failure worth a log line.
    const timeoutMs = this.trainerNamedIt()
      ? Math.min(this.timeoutMs, READ_TIMEOUT_WITH_TRAINER_MS)
      : this.timeoutMs;
    const res = await getJson({ ...up, log: undefined, timeoutMs }, "/weight_info");
    if (res.ok && typeof res.body.weight_version === "string") {
      this.absentUntil.delete(up);
      return { ok: true, version: res.body.weight_version };
    }
    // Only an engine that answered without a version lacks the route. A busy engine that was slow
    // to answer (504) or an unreachable one is asked again on the next call: remembering it as
    // versionless would strip the version from a minute of captures that its engine did report.
    if (res.ok || (res.status !== 502 && res.status !== 504 && res.status < 500)) {
      this.absentUntil.set(up, this.clock() + RECHECK_MS);
      return { ok: true, version: null };
    }
    return { ok: false, why: res.message };
  }

  /**
   * The end of a call, given its start: both versions (the end one is the start's if the engine
   * no longer says), or no span when the engine reports none. A read that failed at either end
   * gives no span and says why: the capture then takes the trainer's version, or none, with the
   * reason (docs/engines.md "Versions under load"); never a guess.
   */
  async end(up: Upstream, start: EngineVersionRead | null): Promise<EngineVersionOutcome> {
    if (start === null) return { span: null, failure: null };
    if (!start.ok) return { span: null, failure: `before the call: ${start.why}` };
    if (start.version === null) return { span: null, failure: null };
    const now = await this.read(up);
    if (!now.ok) return { span: null, failure: `after the call: ${now.why}` };
    return { span: { start: start.version, end: now.version ?? start.version }, failure: null };
  }
}
