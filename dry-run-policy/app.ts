/**
 * The dry-run policy's HTTP surface, shaped like vLLM's OpenAI-compatible server (or SGLang's,
 * see shapes.ts): GET /v1/models, POST /v1/chat/completions (JSON or SSE), POST /tokenize,
 * POST /detokenize, GET /health, plus GET /debug/requests and POST /debug/reset so tests can
 * assert how many upstream calls happened. SGLang shapes add POST /update_weight_version and
 * GET /get_weight_version as SGLang serves them.
 */
import { type Context, Hono } from "hono";
import type { z } from "zod";
import { loadQwen3, type Qwen3 } from "../shared/node/qwen3/qwen3.ts";
import { UPSTREAM_SESSION_HEADER } from "../shared/upstream-session.ts";
import { CompletionRequestSchema, completionBody } from "./completions.ts";
import { DEFAULT_MAX_MODEL_LEN, DEFAULT_MODEL_NAME } from "./defaults.ts";
import { PolicyRequestError, vllmError } from "./errors.ts";
import { generate } from "./generate.ts";
import { PrefillClock, PrefixCache } from "./prefix-cache.ts";
import {
  ChatCompletionRequestSchema,
  DetokenizeRequestSchema,
  describeIssue,
  type TokenizeChatRequest,
  TokenizeChatSchema,
  type TokenizePromptRequest,
  TokenizePromptSchema,
} from "./request-schema.ts";
import { chatCompletionBody } from "./response.ts";
import { sglangChatCompletionBody, sglangChunks } from "./sglang-response.ts";
import { DEFAULT_WEIGHT_VERSION, type PolicyShape } from "./shapes.ts";
import { chatCompletionChunks } from "./stream.ts";

export { DEFAULT_MAX_MODEL_LEN, DEFAULT_MODEL_NAME };

export interface PolicyAppOptions {
  /** Context window reported by /v1/models and enforced on requests (default 131072). */
  maxModelLen?: number;
  /** Name listed by /v1/models; requests may name any model, which is echoed back. */
  modelName?: string;
  /** Answer layout (default `vllm`). */
  shape?: PolicyShape;
  /** The weight version SGLang shapes report (default `default`, as SGLang starts). */
  weightVersion?: string;
  /** Paces streamed chunks: each goes out after its tokens' share of time at this rate (default: no pacing). */
  tokensPerSecond?: number;
  /** Reproduces vllm#27482 for tests: streamed chunks that carry tool-call deltas lose their `token_ids`. */
  dropToolCallIds?: boolean;
  /**
   * Prefix cache capacity in tokens (16-token blocks, LRU). When set, answers report
   * `usage.prompt_tokens_details.cached_tokens` (SGLang shapes: also `meta_info.cached_tokens`).
   */
  prefixCacheTokens?: number;
  /** Simulated prefill speed: each answer waits for its uncached prompt tokens, queued per server. */
  prefillTokensPerSecond?: number;
}

export interface PolicyRequestCounts {
  chat_completions: number;
  tokenize: number;
  detokenize: number;
}

export interface PolicyApp {
  app: Hono;
  /** What `/update_weight_version` does: later answers report this version. */
  setWeightVersion(version: string): void;
  counts: PolicyRequestCounts;
  resetCounts(): void;
}

function errorResponse(c: Context, status: 400 | 404 | 500, message: string, param: string | null = null) {
  return c.json(vllmError(status, message, param), status);
}

type Read<T> = { ok: true; data: T } | { ok: false; response: Response };

async function readJson(c: Context): Promise<Read<unknown>> {
  try {
    return { ok: true, data: JSON.parse(await c.req.text()) };
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, response: errorResponse(c, 400, `JSON decode error: ${detail}`) };
  }
}

function validate<S extends z.ZodType>(c: Context, schema: S, raw: unknown): Read<z.infer<S>> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const { message, param } = describeIssue(parsed.error);
    return { ok: false, response: errorResponse(c, 400, message, param) };
  }
  return { ok: true, data: parsed.data };
}

function failure(c: Context, err: unknown) {
  if (err instanceof PolicyRequestError) return errorResponse(c, err.status, err.message, err.param);
  // Template rendering or tokenizing choked on this input: the client's request, not the server.
  const message = err instanceof Error ? err.message : String(err);
  return errorResponse(c, 400, `could not render or tokenize the request: ${message}`);
}

/** The text /tokenize encodes: the prompt as given, or the rendered chat (generation prompt on by default). */
function tokenizeInput(qwen3: Qwen3, data: TokenizeChatRequest | TokenizePromptRequest): string {
  if (!("messages" in data)) return (data as TokenizePromptRequest).prompt;
  const chat = data as TokenizeChatRequest;
  return qwen3.renderChat(chat.messages, {
    tools: chat.tools,
    addGenerationPrompt: chat.add_generation_prompt ?? true,
    templateKwargs: { enable_thinking: true, ...chat.chat_template_kwargs },
  });
}

/** The token count a streamed chunk stands for (its ids; the role and usage chunks count none). */
function chunkTokens(chunk: Record<string, unknown>, fallback: number): number {
  const choice = Array.isArray(chunk.choices)
    ? (chunk.choices[0] as Record<string, unknown> | undefined)
    : undefined;
  if (!choice) return 0;
  if (Array.isArray(choice.token_ids)) return choice.token_ids.length;
  const lp = (choice.logprobs as { content?: unknown[] } | null | undefined)?.content;
  return Array.isArray(lp) ? lp.length : fallback;
}

function sseStream(
  chunks: readonly Record<string, unknown>[],
  tokensPerSecond: number | undefined,
): ReadableStream<Uint8Array> {
  const utf8 = new TextEncoder();
  let next = 0;
  const started = Date.now();
  let tokensSent = 0;
  return new ReadableStream({
    async pull(controller) {
      if (next < chunks.length) {
        const chunk = chunks[next++];
        if (tokensPerSecond) {
          // Each chunk leaves when its last token would have been sampled at the given rate.
          tokensSent += chunkTokens(chunk, next === 1 ? 0 : 1);
          const due = started + (tokensSent * 1000) / tokensPerSecond;
          const wait = due - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
        controller.enqueue(utf8.encode(`data: ${JSON.stringify(chunk)}\n\n`));
      } else {
        controller.enqueue(utf8.encode("data: [DONE]\n\n"));
        controller.close();
      }
    },
  });
}

/** vllm#27482: vLLM's stream loses `token_ids` on the chunks that carry tool-call deltas. */
function withoutToolCallIds(chunks: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return chunks.map((chunk) => {
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Record<string, unknown>[]) : [];
    const hit = choices.some((c) =>
      Array.isArray((c.delta as { tool_calls?: unknown } | undefined)?.tool_calls),
    );
    if (!hit) return chunk;
    return { ...chunk, choices: choices.map(({ token_ids: _ids, ...rest }) => rest) };
  });
}

export function createPolicyApp(options: PolicyAppOptions = {}, qwen3: Qwen3 = loadQwen3()): PolicyApp {
  const maxModelLen = options.maxModelLen ?? DEFAULT_MAX_MODEL_LEN;
  const modelName = options.modelName ?? DEFAULT_MODEL_NAME;
  const shape = options.shape ?? "vllm";
  let weightVersion = options.weightVersion ?? DEFAULT_WEIGHT_VERSION;
  const counts: PolicyRequestCounts = { chat_completions: 0, tokenize: 0, detokenize: 0 };
  const prefixCache =
    options.prefixCacheTokens !== undefined ? new PrefixCache(options.prefixCacheTokens) : null;
  const prefill = new PrefillClock(options.prefillTokensPerSecond ?? 0);
  const startedAt = Math.floor(Date.now() / 1000);
  const app = new Hono();

  app.get("/health", (c) => c.body(null, 200));

  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: [
        {
          id: modelName,
          object: "model",
          created: startedAt,
          owned_by: shape === "vllm" ? "vllm" : "sglang",
          root: modelName,
          parent: null,
          max_model_len: maxModelLen,
        },
      ],
    }),
  );

  app.post("/v1/chat/completions", async (c) => {
    counts.chat_completions++;
    const raw = await readJson(c);
    if (!raw.ok) return raw.response;
    const body = validate(c, ChatCompletionRequestSchema, raw.data);
    if (!body.ok) return body.response;
    const request = body.data;
    if (shape !== "vllm" && request.stream && (request.return_token_ids || request.return_prompt_token_ids)) {
      // As SGLang: per-choice ids exist only on non-streamed chat.
      return errorResponse(c, 400, "return_token_ids is not supported for streaming chat completions");
    }
    try {
      const gen = generate(qwen3, request, maxModelLen, c.req.header(UPSTREAM_SESSION_HEADER));
      if (prefixCache) {
        gen.cachedTokens = prefixCache.lookup(gen.promptIds);
        prefixCache.insert(gen.promptIds.concat(gen.ids));
      }
      const wait = prefill.schedule(gen.promptIds.length - (gen.cachedTokens ?? 0), Date.now());
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const meta = { model: request.model ?? modelName, created: Math.floor(Date.now() / 1000) };
      if (!request.stream && options.tokensPerSecond) {
        // A paced engine takes as long to answer whole as to stream: the whole answer waits for its last token.
        await new Promise((r) =>
          setTimeout(r, (gen.ids.length * 1000) / (options.tokensPerSecond as number)),
        );
      }
      if (shape !== "vllm" && !request.stream) {
        return c.json(sglangChatCompletionBody(qwen3, request, gen, meta, shape, weightVersion));
      }
      if (!request.stream) return c.json(chatCompletionBody(qwen3, request, gen, meta));
      const planned = chatCompletionChunks(qwen3, request, gen, meta);
      const vllmChunks = options.dropToolCallIds ? withoutToolCallIds(planned) : planned;
      const chunks = shape === "vllm" ? vllmChunks : sglangChunks(vllmChunks, request, gen, shape);
      return c.body(sseStream(chunks, options.tokensPerSecond), 200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
      });
    } catch (err) {
      return failure(c, err);
    }
  });

  app.post("/v1/completions", async (c) => {
    counts.chat_completions++;
    const raw = await readJson(c);
    if (!raw.ok) return raw.response;
    const body = validate(c, CompletionRequestSchema, raw.data);
    if (!body.ok) return body.response;
    try {
      return c.json(
        completionBody(
          qwen3,
          body.data,
          maxModelLen,
          body.data.model ?? modelName,
          c.req.header(UPSTREAM_SESSION_HEADER),
        ),
      );
    } catch (err) {
      return failure(c, err);
    }
  });

  app.post("/tokenize", async (c) => {
    counts.tokenize++;
    const raw = await readJson(c);
    if (!raw.ok) return raw.response;
    const isChat = !!raw.data && typeof raw.data === "object" && "messages" in raw.data;
    const body = isChat
      ? validate(c, TokenizeChatSchema, raw.data)
      : validate(c, TokenizePromptSchema, raw.data);
    if (!body.ok) return body.response;
    try {
      const text = tokenizeInput(qwen3, body.data);
      const wantStrs = body.data.return_token_strs === true;
      const tokens = qwen3.encode(text);
      const tokenStrs = wantStrs ? tokens.map((id) => qwen3.decode([id])) : null;
      return c.json({ count: tokens.length, max_model_len: maxModelLen, tokens, token_strs: tokenStrs });
    } catch (err) {
      return failure(c, err);
    }
  });

  app.post("/detokenize", async (c) => {
    counts.detokenize++;
    const raw = await readJson(c);
    if (!raw.ok) return raw.response;
    const body = validate(c, DetokenizeRequestSchema, raw.data);
    if (!body.ok) return body.response;
    const tooBig = body.data.tokens.find((id) => id >= qwen3.vocabSize);
    if (tooBig !== undefined) {
      return errorResponse(
        c,
        400,
        `token id ${tooBig} is out of vocabulary (size ${qwen3.vocabSize})`,
        "tokens",
      );
    }
    return c.json({ prompt: qwen3.decode(body.data.tokens) });
  });

  if (shape !== "vllm") {
    app.post("/update_weight_version", async (c) => {
      const raw = await readJson(c);
      if (!raw.ok) return raw.response;
      const next = (raw.data as { new_version?: unknown } | null)?.new_version;
      if (typeof next !== "string" || next === "") {
        return errorResponse(c, 400, "new_version must be a non-empty string", "new_version");
      }
      weightVersion = next;
      return c.json({ success: true, message: `Weight version updated to ${next}`, new_version: next });
    });
    app.get("/get_weight_version", (c) => c.json({ weight_version: weightVersion }));
  }

  app.get("/debug/requests", (c) => c.json(counts));
  app.get("/debug/prefix-cache", (c) => c.json(prefixCache?.stats() ?? null));
  app.post("/debug/reset", (c) => {
    resetCounts();
    prefixCache?.clear();
    prefill.reset();
    return c.json(counts);
  });

  app.notFound((c) => c.json({ detail: "Not Found" }, 404));
  app.onError((err, c) => errorResponse(c, 500, err.message));

  function resetCounts(): void {
    counts.chat_completions = 0;
    counts.tokenize = 0;
    counts.detokenize = 0;
  }
  return {
    app,
    counts,
    resetCounts,
    setWeightVersion: (v) => {
      weightVersion = v;
    },
  };
}
