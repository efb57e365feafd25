import { describe, expect, it } from "vitest";
import { mergeRewards } from "../../batch-runner/evaluation/merge-rewards.ts";
import { toolStepRewards } from "../../batch-runner/evaluation/tool-step-rewards.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { Trace, type Trajectory } from "../../shared/schemas/trajectory.ts";

const qwen = loadQwen3();
const enc = (text: string) => qwen.encode(text);

/** A Qwen3 chat trace: `turns` sampled (mask 1), each followed by what the template inserted (mask 0). */
function trajectory(turns: [string, string][]): Trajectory {
  const prompt = enc("<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n");
  const response: number[] = [];
  const mask: (0 | 1)[] = [];
  for (const [sampled, inserted] of turns) {
    const s = enc(sampled);
    const i = enc(inserted);
    response.push(...s, ...i);
    mask.push(...s.map(() => 1 as const), ...i.map(() => 0 as const));
  }
  const trace = Trace.parse({
    prompt_ids: prompt,
    response_ids: response,
    loss_mask: mask,
    response_logprobs: null,
    reward: null,
    finish_reason: "stop",
    capture_ids: [],
  });
  return {
    status: "COMPLETED",
    traces: [trace],
    builder: "prefix_merging",
    reconstruction_stats: {
      captures: turns.length,
      excluded_no_token_ids: 0,
      excluded_failed: 0,
      chains: 1,
      prefix_breaks: 0,
      trainable_tokens: mask.filter((m) => m === 1).length,
      context_tokens: 0,
      capture_gaps: 0,
      orphans: 0,
      break_reasons: {},
    },
    error: null,
  };
}

const call = (cmd: string) =>
  `<tool_call>\n{"name": "shell", "arguments": {"cmd": "${cmd}"}}\n</tool_call><|im_end|>`;
const result = (...outputs: string[]) =>
  `\n<|im_start|>user\n${outputs.map((o) => `<tool_response>\n${o}\n</tool_response>`).join("\n")}<|im_end|>\n<|im_start|>assistant\n`;

describe("tool_results step rewards", () => {
  it("gives each tool-calling turn 1 when its results came back clean, 0 when any failed, none otherwise", () => {
    const t = trajectory([
      [call("ls"), result("a.txt")],
      [call("cat b.txt"), result("cat: b.txt: No such file or directory\n(exit 1)")],
      ["Let me think.<|im_end|>", "\n<|im_start|>user\ngo on<|im_end|>\n<|im_start|>assistant\n"],
      [`${call("true")}`, result("(no output)", "[tool error] permission denied")],
      [call("echo done"), ""],
    ]);
    const steps = toolStepRewards(t, qwen);
    expect(steps).toEqual([[1, 0, null, 0, null]]);
    // And they land on the turns' token spans.
    const merged = mergeRewards(t, { outcome_reward: 1, step_rewards: steps, metadata: {} });
    const spans = merged.trajectory.traces[0].step_rewards ?? [];
    expect(spans.map((s) => s.reward)).toEqual([1, 0, 0]);
    const response = t.traces[0].response_ids;
    expect(qwen.decode(response.slice(spans[1].start, spans[1].end))).toBe(call("cat b.txt"));
  });

  it("reads a literal `<tool_response>` the model wrote as text, not as a result", () => {
    const t = trajectory([
      [call("ls"), result("ok")],
      ["I saw <tool_response> (exit 1)<|im_end|>", ""],
    ]);
    expect(toolStepRewards(t, qwen)).toEqual([[1, null]]);
  });
});
