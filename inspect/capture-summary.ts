import type { CaptureRecord } from "../shared/schemas/capture.ts";

/** One model call as the proxy captured it: who, which model, how many tokens, how long, which policy. */
export function summarizeCapture(file: string, c: CaptureRecord): string[] {
  const latency = Date.parse(c.ended_at) - Date.parse(c.started_at);
  const versions =
    c.policy_version_end && c.policy_version_end !== c.policy_version
      ? `${c.policy_version ?? "none"} -> ${c.policy_version_end} (crossed a weight update)`
      : (c.policy_version ?? "none");
  const lines = [
    `${file}: capture`,
    `  task ${c.task_id}  session ${c.session_id}  attempt ${c.attempt}  capture ${c.capture_id}`,
    `  ${c.provider} ${c.path}${c.stream ? " (streamed to the client)" : ""}  model ${c.model_requested ?? "none"}${c.model_served && c.model_served !== c.model_requested ? ` served as ${c.model_served}` : ""}`,
    `  started ${c.started_at}  latency ${Number.isFinite(latency) ? `${latency} ms` : "unknown"}  finish ${c.finish_reason ?? "none"}  policy ${versions}`,
    c.prompt_token_ids && c.response_token_ids
      ? `  ${c.prompt_token_ids.length} prompt tokens, ${c.response_token_ids.length} response tokens, logprobs ${c.response_logprobs ? "yes" : "missing"}`
      : "  no token ids: this call is not trainable",
  ];
  if (c.sampling) {
    const params = Object.entries(c.sampling.params)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
    lines.push(
      `  sampling ${params || "(engine defaults)"}; logprobs ${c.sampling.logprobs_mode}${c.sampling.task_overrides.length ? `; task set ${c.sampling.task_overrides.join(", ")}` : ""}`,
    );
  }
  if (c.error) lines.push(`  error ${c.error.status}: ${c.error.message}`);
  return lines;
}
