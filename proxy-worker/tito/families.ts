/**
 * What a chat-template family does at the end of an assistant turn (docs/tito.md, "Template
 * families"). The generic delta render handles a template whose closing token is the one the model
 * samples (ChatML: Qwen3, SmolLM2 sample `<|im_end|>`, the template writes it and a newline). Two
 * families close a past turn with another token than the one sampled:
 *
 * - Llama 3.x: a turn that hands over to a tool may end with a sampled `<|eom_id|>`; the template
 *   writes every past turn with `<|eot_id|>`.
 * - GPT-OSS harmony: a final answer ends with a sampled `<|return|>`, a tool call with `<|call|>`;
 *   history writes `<|end|>` after a final answer. vLLM renders harmony chats itself, not through a
 *   template, and names a tool result after the assistant tool call it answers.
 *
 * A sampled closer of a family stands for the rendered one: the spliced prompt keeps the sampled id
 * (the model continues from exactly what it sampled; that id is trainable, it was sampled) and
 * leaves out the rendered one. Families are recognised by the engine's own vocabulary: the one whose
 * rendered closer is a single token there.
 */
import type { Gateway } from "../deps.ts";
import { isTokenIdArray } from "../engines/engine.ts";
import { postJson } from "../upstream.ts";

interface FamilySpec {
  name: "chatml" | "llama3" | "harmony";
  /** What the template writes after a past assistant turn. */
  rendered: string;
  /** What the model may sample to end a turn, each standing for `rendered`. */
  sampled: readonly string[];
  /**
   * The engine renders the chat itself (not with the template /tokenize uses), and a tool result is
   * named after the assistant tool call before it: the delta is rendered by the engine's chat
   * renderer, after a stand-in turn that makes the same tool calls.
   */
  harmony: boolean;
}

export const FAMILIES: readonly FamilySpec[] = [
  { name: "chatml", rendered: "<|im_end|>", sampled: [], harmony: false },
  { name: "llama3", rendered: "<|eot_id|>", sampled: ["<|eom_id|>"], harmony: false },
  { name: "harmony", rendered: "<|end|>", sampled: ["<|return|>", "<|call|>"], harmony: true },
];

export interface Family {
  name: FamilySpec["name"];
  harmony: boolean;
  /** The rendered closer's id and the ids of the sampled closers that stand for it. */
  renderedId: number;
  sampledIds: ReadonlySet<number>;
}

/** Probed once per proxy and model; families are looked up only when the generic render falls short. */
const probes = new WeakMap<object, Map<string, Promise<Family | null>>>();

export function familyOf(g: Gateway, model: string): Promise<Family | null> {
  let perModel = probes.get(g.tito);
  if (!perModel) {
    perModel = new Map();
    probes.set(g.tito, perModel);
  }
  let probe = perModel.get(model);
  if (!probe) {
    probe = detect(g, model).catch(() => null);
    perModel.set(model, probe);
  }
  return probe;
}

/** The id of `text` when the engine's tokenizer has it as one special token, else null. */
async function singleId(g: Gateway, model: string, text: string): Promise<number | null> {
  const res = await postJson(g.upstream, "/tokenize", { model, prompt: text, add_special_tokens: false });
  if (!res.ok || !isTokenIdArray(res.body.tokens)) return null;
  return res.body.tokens.length === 1 ? res.body.tokens[0] : null;
}

async function detect(g: Gateway, model: string): Promise<Family | null> {
  for (const spec of FAMILIES) {
    const renderedId = await singleId(g, model, spec.rendered);
    if (renderedId === null) continue;
    const sampledIds = new Set<number>();
    for (const text of spec.sampled) {
      const id = await singleId(g, model, text);
      if (id !== null) sampledIds.add(id);
    }
    return { name: spec.name, harmony: spec.harmony, renderedId, sampledIds };
  }
  return null;
}

/** Whether a sampled closing id stands for the template's rendered one in this family. */
export function closesAlike(family: Family | null, sampledId: number, renderedId: number): boolean {
  return family !== null && renderedId === family.renderedId && family.sampledIds.has(sampledId);
}
