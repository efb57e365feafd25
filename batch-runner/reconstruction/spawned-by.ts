import { contentText } from "../../shared/node/qwen3/template-messages.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { type BuiltChain, breakContext, type ChainBreak } from "./chains.ts";
import { commonPrefixFrom } from "./token-hash.ts";

/**
 * Tools whose call starts a sub-agent, and the argument that becomes the sub-agent's first user
 * message: Claude Code's `Agent` (called `Task` before 2.1), OpenCode's `task`. A harness whose
 * sub-agents are spawned otherwise is still split into chains (`sub_agent` breaks), only without the
 * parent's tool call id.
 */
export const SPAWNING_TOOLS: Readonly<Record<string, string>> = {
  Agent: "prompt",
  Task: "prompt",
  task: "prompt",
};

/** A spawning tool call the policy sampled. */
interface SpawnCall {
  chain: BuiltChain;
  /** The capture whose answer holds the call. */
  captureId: string;
  /** The id the harness knows the call by (its history and tool result), else the engine's. */
  id: string;
  prompt: string;
}

/**
 * Links each chain whose first user message carries the prompt of an earlier spawning tool call to
 * the chain that made the call: its break becomes `sub_agent`, its parent that chain, and
 * `toolCallId` the call's id, so a session's traces form a tree. The latest such call before the
 * chain's first capture wins (a harness spawns a sub-agent right after sampling the call).
 */
export function linkSubAgents(chains: readonly BuiltChain[]): void {
  const calls: SpawnCall[] = [];
  const historyIds = clientCallIds(chains);
  for (const chain of chains) {
    for (const turn of chain.turns) {
      for (const call of spawningCalls(turn.capture)) {
        const id = historyIds.get(callKey(call.name, call.prompt)) ?? call.id;
        calls.push({ chain, captureId: turn.capture.capture_id, id, prompt: call.prompt });
      }
    }
  }
  if (calls.length === 0) return;
  calls.sort((a, b) => (a.captureId < b.captureId ? -1 : a.captureId > b.captureId ? 1 : 0));
  for (const chain of chains) {
    // A chain that goes on from another of its own conversation (a sub-agent's retry, drift) keeps its parent.
    if (chain.brk !== null && chain.brk.reason !== "sub_agent" && chain.brk.reason !== "unknown") continue;
    const first = chain.turns[0].capture;
    const text = firstUserText(first);
    if (text === null) continue;
    let found: SpawnCall | null = null;
    for (const call of calls) {
      if (call.captureId >= first.capture_id) break;
      if (call.chain !== chain && text.includes(call.prompt)) found = call;
    }
    if (found === null) continue;
    chain.brk = { ...breakFrom(chain, found.chain, "sub_agent"), toolCallId: found.id };
  }
}

interface SampledSpawn {
  name: string;
  id: string;
  prompt: string;
}

/** Spawning calls in a capture's answer (`choices[0].message.tool_calls` of the engine's reply). */
function spawningCalls(capture: CaptureRecord): SampledSpawn[] {
  const choices = (capture.response as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices) || choices.length === 0) return [];
  const toolCalls = (choices[0] as { message?: { tool_calls?: unknown } } | null)?.message?.tool_calls;
  if (!Array.isArray(toolCalls)) return [];
  const out: SampledSpawn[] = [];
  for (const call of toolCalls) {
    const spawn = asSpawn(call);
    if (spawn) out.push(spawn);
  }
  return out;
}

/** A Chat Completions tool call that spawns a sub-agent with a non-empty prompt, or null. */
function asSpawn(call: unknown): SampledSpawn | null {
  const c = call as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
  const name = c?.function?.name;
  if (typeof name !== "string" || !(name in SPAWNING_TOOLS)) return null;
  let args: unknown = c?.function?.arguments;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      return null;
    }
  }
  const prompt = (args as Record<string, unknown> | null)?.[SPAWNING_TOOLS[name]];
  if (typeof prompt !== "string" || prompt.trim() === "") return null;
  return { name, id: typeof c?.id === "string" ? c.id : "", prompt: prompt.trim() };
}

const callKey = (name: string, prompt: string) => `${name}\u0000${prompt}`;

/**
 * The ids harnesses gave spawning calls in later requests' history (the provider's own id, e.g. an
 * Anthropic `tool_use` id, which the engine's reply did not carry), by tool name and prompt.
 */
function clientCallIds(chains: readonly BuiltChain[]): Map<string, string> {
  const ids = new Map<string, string>();
  for (const chain of chains) {
    for (const turn of chain.turns) {
      const messages = (turn.capture.chat_request as { messages?: unknown } | null)?.messages;
      if (!Array.isArray(messages)) continue;
      for (const m of messages) {
        const calls = (m as { role?: unknown; tool_calls?: unknown } | null)?.tool_calls;
        if ((m as { role?: unknown }).role !== "assistant" || !Array.isArray(calls)) continue;
        for (const call of calls) {
          const spawn = asSpawn(call);
          if (spawn && spawn.id !== "") ids.set(callKey(spawn.name, spawn.prompt), spawn.id);
        }
      }
    }
  }
  return ids;
}

/** The text of each user message of a capture's normalized request, in order. */
export function userTexts(capture: CaptureRecord): string[] {
  const messages = (capture.chat_request as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return [];
  return messages
    .filter((m) => (m as { role?: unknown } | null)?.role === "user")
    .map((m) => contentText((m as { content?: unknown }).content));
}

/** The text of the first user message of a capture's normalized request. */
export function firstUserText(capture: CaptureRecord): string | null {
  return userTexts(capture)[0] ?? null;
}

/**
 * A break of `chain` from `parent` with the position and context recomputed against that parent: its
 * latest call before the chain's first one (prompt + response), as chain-breaks.ts does.
 */
export function breakFrom(chain: BuiltChain, parent: BuiltChain, reason: ChainBreak["reason"]): ChainBreak {
  const first = chain.turns[0];
  const id = first.capture.capture_id;
  let before = parent.turns[0];
  for (const t of parent.turns) {
    if (t.capture.capture_id < id && t.capture.capture_id > before.capture.capture_id) before = t;
  }
  const position = commonPrefixFrom(first.prompt, before.prompt, before.response, 0);
  return { reason, parent, position, context: breakContext(first.prompt, position) };
}
