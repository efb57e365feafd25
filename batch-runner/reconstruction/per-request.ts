import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { Trace } from "../../shared/schemas/trajectory.ts";
import type { BuildOutput, TrajectoryBuilder } from "./builder.ts";
import { usableCaptures } from "./usable-captures.ts";

/** One trace per capture: the prompt as context, the whole response trainable. */
export const perRequestBuilder: TrajectoryBuilder = {
  strategy: "per_request",
  build(captures: readonly CaptureRecord[]): BuildOutput {
    const { turns, excludedFailed, excludedNoTokenIds } = usableCaptures(captures);
    let trainable = 0;
    let context = 0;
    const traces: Trace[] = turns.map((turn) => {
      trainable += turn.response.length;
      context += turn.prompt.length;
      const version = turn.capture.policy_version;
      return {
        prompt_ids: [...turn.prompt],
        response_ids: [...turn.response],
        loss_mask: turn.response.map(() => 1 as const),
        // An empty response has no trainable token that could lack a logprob.
        response_logprobs:
          turn.logprobs !== null ? [...turn.logprobs] : turn.response.length === 0 ? [] : null,
        reward: null,
        finish_reason: turn.capture.finish_reason,
        capture_ids: [turn.capture.capture_id],
        policy_version: version,
        metadata: { turns: 1, policy_versions: version === null ? [] : [version] },
      };
    });
    return {
      traces,
      stats: {
        captures: captures.length,
        excluded_no_token_ids: excludedNoTokenIds,
        excluded_failed: excludedFailed,
        chains: traces.length,
        prefix_breaks: 0,
        trainable_tokens: trainable,
        context_tokens: context,
      },
    };
  },
};
