/**
 * Multi-turn tool-using conversations driven with the official openai SDK through the real proxy
 * in front of the dry-run policy (real Qwen3 template and tokenizer), reconstructed from the
 * captures the proxy stored. What the Qwen3 template does to earlier turns decides the chains.
 */
import { parquetReadObjects } from "hyparquet";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reconstructSession } from "../../batch-runner/reconstruction/build-session.ts";
import { reconstructTask } from "../../batch-runner/reconstruction/reconstruct-task.ts";
import { POLICY_SHAPES } from "../../dry-run-policy/shapes.ts";
import { keys } from "../../shared/keys.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import type { Trace } from "../../shared/schemas/trajectory.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";

const KEY = "reconstruction-e2e-key";
const TASK = "recon-e2e";
const tools: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "shell",
      description: "Run a shell command",
      parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    },
  },
];
const STEPS = [
  "shell: ls",
  "think: the listing shows a.txt",
  "shell: cat a.txt",
  "think: all done",
  "say: Done.",
];
const builder = { strategy: "prefix_merging" as const, config: {} };

let policy: PolicyServer;
let proxy: TestProxy;
beforeAll(async () => {
  policy = await startPolicy();
  proxy = await startProxy({ upstream: policy.url, auth: { signingKey: KEY } });
});
afterAll(async () => {
  await proxy?.close();
  await policy?.close();
});

interface Agent {
  /** Sends the conversation; appends the assistant's answer and tool results the way a harness does. Returns false when done. */
  step(): Promise<boolean>;
}

async function agent(
  sessionId: string,
  opts: { system: string; thinking: boolean; passReasoning: boolean; stream?: boolean; via?: TestProxy },
): Promise<Agent> {
  const token = await mintSessionToken({ sessionId, taskId: TASK }, KEY);
  const client = new OpenAI({ baseURL: `${(opts.via ?? proxy).url}/v1`, apiKey: token, maxRetries: 0 });
  const messages: (ChatCompletionMessageParam & { reasoning_content?: string })[] = [
    { role: "system", content: opts.system },
    { role: "user", content: scriptMessage(STEPS) },
  ];
  return {
    async step() {
      const params = {
        model: "qwen3",
        messages,
        tools,
        chat_template_kwargs: { enable_thinking: opts.thinking },
      };
      const msg = opts.stream ? await streamed(client, params) : await complete(client, params);
      messages.push({
        role: "assistant",
        content: msg.content,
        ...(msg.tool_calls.length > 0 ? { tool_calls: msg.tool_calls } : {}),
        ...(opts.passReasoning && msg.reasoning ? { reasoning_content: msg.reasoning } : {}),
      });
      for (const call of msg.tool_calls) {
        messages.push({
          role: "tool",
          tool_call_id: call.id,
          content: `ran ${call.function.arguments}: a.txt`,
        });
      }
      return msg.tool_calls.length > 0;
    },
  };
}

interface AssistantMessage {
  content: string | null;
  reasoning: string;
  tool_calls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}

async function complete(client: OpenAI, params: object): Promise<AssistantMessage> {
  const res = await client.chat.completions.create(
    params as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
  );
  const msg = res.choices[0].message as OpenAI.Chat.ChatCompletionMessage & { reasoning?: string };
  const calls = (msg.tool_calls ?? []).flatMap((c) => (c.type === "function" ? [c] : []));
  return { content: msg.content, reasoning: msg.reasoning ?? "", tool_calls: calls };
}

/** Assembles a stream the way a harness does: deltas concatenated, tool calls by index. */
async function streamed(client: OpenAI, params: object): Promise<AssistantMessage> {
  const stream = await client.chat.completions.create({
    ...(params as OpenAI.Chat.ChatCompletionCreateParamsStreaming),
    stream: true,
  });
  let content = "";
  let reasoning = "";
  const calls: AssistantMessage["tool_calls"] = [];
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta as
      | (OpenAI.Chat.ChatCompletionChunk.Choice.Delta & { reasoning?: string })
      | undefined;
    content += delta?.content ?? "";
    reasoning += delta?.reasoning ?? "";
    for (const tc of delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
      if (tc.id) calls[tc.index].id = tc.id;
      calls[tc.index].function.name += tc.function?.name ?? "";
      calls[tc.index].function.arguments += tc.function?.arguments ?? "";
    }
  }
  return { content: content || null, reasoning, tool_calls: calls };
}

async function runToEnd(a: Agent): Promise<void> {
  for (let i = 0; i < 10 && (await a.step()); i++);
}

/** The trainable spans of a trace, decoded. */
function trainableTexts(t: Trace): string[] {
  const q = loadQwen3();
  const spans: string[] = [];
  let start = -1;
  for (let i = 0; i <= t.loss_mask.length; i++) {
    const on = i < t.loss_mask.length && t.loss_mask[i] === 1;
    if (on && start < 0) start = i;
    if (!on && start >= 0) {
      spans.push(q.decode(t.response_ids.slice(start, i), { skipSpecialTokens: false }));
      start = -1;
    }
  }
  return spans;
}

describe("reconstruction of real proxy captures", () => {
  it("merges a thinking tool loop whose reasoning the harness sends back into one trace", async () => {
    await runToEnd(
      await agent("think-kept", { system: "You are an agent.", thinking: true, passReasoning: true }),
    );
    const captures = await readCaptures(proxy.store, TASK, "think-kept");
    expect(captures).toHaveLength(3);
    const { trajectory } = await reconstructSession({
      store: proxy.store,
      task: { task_id: TASK, builder },
      sessionId: "think-kept",
    });
    expect(trajectory.reconstruction_stats).toMatchObject({ captures: 3, chains: 1, prefix_breaks: 0 });
    const [t] = trajectory.traces;
    expect(t.capture_ids).toEqual(captures.map((c) => c.capture_id));
    // The policy's sampled ids end with <|im_end|>: trainable once, repeated (not doubled) by the next prompt.
    expect(t.metadata.end_of_turn).toEqual({ sampled: 2, template: 0, none: 0 });
    const last = captures[2];
    expect([...t.prompt_ids, ...t.response_ids]).toEqual([
      ...(last.prompt_token_ids ?? []),
      ...(last.response_token_ids ?? []),
    ]);
    const spans = trainableTexts(t);
    expect(spans).toHaveLength(3);
    expect(spans[0]).toContain('"command": "ls"');
    expect(spans[1]).toContain("the listing shows a.txt");
    expect(spans[2]).toMatch(/all done[\s\S]*Done\.<\|im_end\|>$/);
    expect(t.response_logprobs).not.toBeNull();
  });

  it("breaks the chain where the harness drops reasoning (the template re-renders the turn without it)", async () => {
    await runToEnd(
      await agent("think-dropped", { system: "You are an agent.", thinking: true, passReasoning: false }),
    );
    const { trajectory } = await reconstructSession({
      store: proxy.store,
      task: { task_id: TASK, builder },
      sessionId: "think-dropped",
    });
    // Turn 1 has no reasoning, so turn 2's prompt extends it; turn 2's reasoning is gone from turn 3's prompt.
    expect(trajectory.traces.map((t) => t.capture_ids.length)).toEqual([2, 1]);
    expect(trajectory.reconstruction_stats).toMatchObject({ chains: 2, prefix_breaks: 1 });
    // The messages went on unchanged: the break is the template's re-render, not the harness's history.
    expect(trajectory.reconstruction_stats.break_reasons).toEqual({ template_drift: 1 });
    expect(trajectory.traces[1]).toMatchObject({
      break_reason: "template_drift",
      parent_trace: 0,
      orphan: false,
    });
  });

  it("gives one trace per turn with enable_thinking off (the generation prompt's empty think block is not re-rendered)", async () => {
    await runToEnd(
      await agent("no-think", { system: "You are an agent.", thinking: false, passReasoning: false }),
    );
    const { trajectory } = await reconstructSession({
      store: proxy.store,
      task: { task_id: TASK, builder },
      sessionId: "no-think",
    });
    expect(trajectory.reconstruction_stats).toMatchObject({ captures: 3, chains: 3, prefix_breaks: 2 });
    expect(trajectory.reconstruction_stats.break_reasons).toEqual({ template_drift: 2 });
    const q = loadQwen3();
    expect(q.decode(trajectory.traces[0].prompt_ids.slice(-6), { skipSpecialTokens: false })).toContain(
      "<think>\n\n</think>\n\n",
    );
  });

  it("keeps two interleaved sub-agents of one session apart (one of them streaming)", async () => {
    const main = await agent("sub-agents", {
      system: "You are the main agent.",
      thinking: true,
      passReasoning: true,
    });
    const sub = await agent("sub-agents", {
      system: "You are a sub-agent.",
      thinking: true,
      passReasoning: true,
      stream: true,
    });
    let more = [true, true];
    while (more[0] || more[1]) more = [more[0] && (await main.step()), more[1] && (await sub.step())];
    const { trajectory } = await reconstructSession({
      store: proxy.store,
      task: { task_id: TASK, builder },
      sessionId: "sub-agents",
    });
    expect(trajectory.reconstruction_stats).toMatchObject({ captures: 6, chains: 2, prefix_breaks: 0 });
    expect(trajectory.reconstruction_stats).toMatchObject({ break_reasons: { sub_agent: 1 }, orphans: 0 });
    const captures = await readCaptures(proxy.store, TASK, "sub-agents");
    expect(captures.map((c) => c.stream)).toEqual([false, true, false, true, false, true]);
    const ids = captures.map((c) => c.capture_id);
    expect(trajectory.traces.map((t) => t.capture_ids)).toEqual([
      [ids[0], ids[2], ids[4]],
      [ids[1], ids[3], ids[5]],
    ]);
  });

  it("gives a trace that spans a weight update two versions and crossed_weight_update", async () => {
    const versioned = await startProxy({
      upstream: policy.url,
      auth: { signingKey: KEY },
      adminToken: "adm",
      policyVersion: "step-1",
    });
    try {
      const a = await agent("weights", {
        system: "You are an agent.",
        thinking: true,
        passReasoning: true,
        via: versioned,
      });
      await a.step();
      const r = await fetch(`${versioned.url}/admin/policy-version`, {
        method: "POST",
        headers: { authorization: "Bearer adm" },
        body: JSON.stringify({ version: "step-2" }),
      });
      expect(r.status).toBe(200);
      await runToEnd(a);
      const { trajectory } = await reconstructSession({
        store: versioned.store,
        task: { task_id: TASK, builder },
        sessionId: "weights",
      });
      expect(trajectory.traces).toHaveLength(1);
      const [t] = trajectory.traces;
      expect(t.version_spans.map((v) => [v.version_start, v.version_end])).toEqual([
        ["step-1", "step-1"],
        ["step-2", "step-2"],
        ["step-2", "step-2"],
      ]);
      expect(t).toMatchObject({ crossed_weight_update: true, policy_version: "step-1" });
      // Each span is exactly where a trainable run of tokens sits.
      for (const v of t.version_spans)
        expect(t.loss_mask.slice(v.start, v.end).every((m) => m === 1)).toBe(true);
    } finally {
      await versioned.close();
    }
  });

  it.each(POLICY_SHAPES.filter((shape) => shape !== "vllm"))(
    "reconstructs the same trace, with no capture gap, from the policy in the %s layout",
    async (shape) => {
      const sglang = await startPolicy({ shape, weightVersion: "sgl-7" });
      const via = await startProxy({ upstream: sglang.url, auth: { signingKey: KEY }, engine: "sglang" });
      // The same script through the vLLM layout, in a store of its own (the last test counts sessions).
      const vllm = await startProxy({ upstream: policy.url, auth: { signingKey: KEY } });
      try {
        const opts = { system: "You are an agent.", thinking: true, passReasoning: true };
        await runToEnd(await agent(`vllm-ref-${shape}`, { ...opts, via: vllm }));
        await runToEnd(await agent(`on-${shape}`, { ...opts, via }));
        const rebuild = async (store: TestProxy["store"], sessionId: string) =>
          (await reconstructSession({ store, task: { task_id: TASK, builder }, sessionId })).trajectory;
        const reference = await rebuild(vllm.store, `vllm-ref-${shape}`);
        const trajectory = await rebuild(via.store, `on-${shape}`);
        expect(trajectory.reconstruction_stats).toMatchObject({ captures: 3, chains: 1, capture_gaps: 0 });
        const [t] = trajectory.traces;
        const [r] = reference.traces;
        expect([t.prompt_ids, t.response_ids, t.loss_mask]).toEqual([
          r.prompt_ids,
          r.response_ids,
          r.loss_mask,
        ]);
        expect(t.version_spans.map((v) => v.version_start)).toEqual(["sgl-7", "sgl-7", "sgl-7"]);
      } finally {
        await via.close();
        await vllm.close();
        await sglang.close();
      }
    },
  );

  it("writes results and a shard for these hosted sessions with the reconstruct path", async () => {
    const out = await reconstructTask({ store: proxy.store, taskId: TASK });
    expect(out.results.map((r) => [r.session_id, r.status, r.trajectory.traces.length])).toEqual([
      ["no-think", "COMPLETED", 3],
      ["sub-agents", "COMPLETED", 2],
      ["think-dropped", "COMPLETED", 2],
      ["think-kept", "COMPLETED", 1],
    ]);
    expect(out.shard).toMatchObject({ key: keys.shard(TASK), rows: 8, sessions: 4 });
    const bytes = (await proxy.store.get(keys.shard(TASK))) as Uint8Array;
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    });
    expect(rows.map((r) => [r.sample_index, r.trace_index])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
      [1, 0],
      [1, 1],
      [2, 0],
      [2, 1],
      [3, 0],
    ]);
    const kept = rows.find((r) => r.session_id === "think-kept");
    expect(kept?.response_ids).toEqual(out.results[3].trajectory.traces[0].response_ids);
  });
});
