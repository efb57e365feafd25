import { z } from "zod";
import type { HarnessOutcome } from "./preset.ts";

/*
 * Readers for each CLI's machine-readable output. Lenient where the CLIs add fields (loose
 * objects, unknown event types skipped), strict only about what we read. A CLI that printed
 * nothing useful (crash, killed by timeout) yields `finalAnswer: null, success: false`, never
 * an exception: bad output must not crash POSTRUN.
 */

/** Every line of `text` that parses as a JSON value; log lines and partial lines are skipped. */
export function jsonLines(text: string): unknown[] {
  const out: unknown[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) continue;
    try {
      out.push(JSON.parse(trimmed));
    } catch {
      // A log line that happens to start with a brace, or output cut off by a kill.
    }
  }
  return out;
}

/**
 * The last complete JSON document in `text`, for CLIs that pretty-print one object at the end
 * (possibly after log lines). Tries the whole text first, then each line that opens a document.
 */
export function lastJsonDocument(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    // Fall through: search for where the document starts.
  }
  const lines = trimmed.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const head = lines[i]?.trimStart() ?? "";
    if (!head.startsWith("{") && !head.startsWith("[")) continue;
    try {
      return JSON.parse(lines.slice(i).join("\n"));
    } catch {
      // Not the start of the final document; keep looking upwards.
    }
  }
  return undefined;
}

function pick<T>(schema: z.ZodType<T>, values: unknown[]): T[] {
  const out: T[] = [];
  for (const value of values) {
    const parsed = schema.safeParse(value);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}

const failed: HarnessOutcome = { finalAnswer: null, success: false };

// --- Claude Code (`--output-format stream-json`) and Qwen Code (`--output-format json`) ---

const ClaudeResult = z.looseObject({
  type: z.literal("result"),
  subtype: z.string().optional(),
  is_error: z.boolean().optional(),
  result: z.string().optional(),
});

const ClaudeAssistant = z.looseObject({
  type: z.literal("assistant"),
  message: z.looseObject({
    content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  }),
});

function claudeStyleOutcome(events: unknown[], exitCode: number | null): HarnessOutcome {
  const result = pick(ClaudeResult, events).at(-1);
  if (result) {
    const ok = result.is_error !== true && (result.subtype ?? "success") === "success";
    return { finalAnswer: result.result ?? null, success: ok && exitCode === 0 };
  }
  // No result event (killed mid-run): the last thing the model said is still worth keeping.
  const last = pick(ClaudeAssistant, events).at(-1);
  const text = last?.message.content
    .filter((block) => block.type === "text" && block.text)
    .map((block) => block.text)
    .join("");
  return { finalAnswer: text || null, success: false };
}

/** Claude Code stream-json: one event per line, ending with a `result` event. */
export function parseClaudeStreamJson(stdout: string, exitCode: number | null): HarnessOutcome {
  return claudeStyleOutcome(jsonLines(stdout), exitCode);
}

/**
 * Qwen Code `--output-format json`: one JSON array of Claude-style messages (system, assistant,
 * user, result). Also accepts the stream-json form (one message per line).
 */
export function parseQwenJson(stdout: string, exitCode: number | null): HarnessOutcome {
  const doc = lastJsonDocument(stdout);
  const events = Array.isArray(doc) ? doc : jsonLines(stdout).flat();
  return claudeStyleOutcome(events, exitCode);
}

// --- Codex (`codex exec --json`) ---

const CodexItemCompleted = z.looseObject({
  type: z.literal("item.completed"),
  item: z.looseObject({ type: z.string(), text: z.string().optional() }),
});
const CodexEvent = z.looseObject({ type: z.string() });

/** Codex JSONL: the answer is the last `agent_message` item; `turn.completed` means success. */
export function parseCodexJsonl(stdout: string, exitCode: number | null): HarnessOutcome {
  const events = jsonLines(stdout);
  const messages = pick(CodexItemCompleted, events).filter((e) => e.item.type === "agent_message");
  const types = pick(CodexEvent, events).map((e) => e.type);
  const completed = types.includes("turn.completed");
  const errored = types.includes("turn.failed") || types.includes("error");
  return {
    finalAnswer: messages.at(-1)?.item.text ?? null,
    success: completed && !errored && exitCode === 0,
  };
}

// --- Gemini CLI (`--output-format json`) ---

const GeminiJson = z.looseObject({
  response: z.string().nullable().optional(),
  error: z.unknown().optional(),
});

/** Gemini CLI prints one JSON object `{session_id, response, stats, error?}` at the end. */
export function parseGeminiJson(stdout: string, exitCode: number | null): HarnessOutcome {
  const parsed = GeminiJson.safeParse(lastJsonDocument(stdout));
  if (!parsed.success) return failed;
  const hasError = parsed.data.error !== undefined && parsed.data.error !== null;
  return { finalAnswer: parsed.data.response ?? null, success: !hasError && exitCode === 0 };
}

// --- OpenCode (`opencode run --format json`) ---

const OpencodeText = z.looseObject({
  type: z.literal("text"),
  part: z.looseObject({ text: z.string() }),
});
const OpencodeError = z.looseObject({ type: z.literal("error") });

/** OpenCode JSONL events: `text` parts carry the answer, an `error` event means failure. */
export function parseOpencodeJsonl(stdout: string, exitCode: number | null): HarnessOutcome {
  const events = jsonLines(stdout);
  const texts = pick(OpencodeText, events);
  const errored = pick(OpencodeError, events).length > 0;
  return {
    finalAnswer: texts.at(-1)?.part.text ?? null,
    success: !errored && exitCode === 0,
  };
}

// --- Pi (`pi --mode json`) ---

const PiAssistant = z.looseObject({
  role: z.literal("assistant"),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  stopReason: z.string().optional(),
});
const PiAgentEnd = z.looseObject({ type: z.literal("agent_end"), messages: z.array(z.unknown()) });
const PiMessageEnd = z.looseObject({ type: z.literal("message_end"), message: z.unknown() });

/** Pi JSONL: `agent_end` lists the conversation; the last assistant message is the answer. */
export function parsePiJsonl(stdout: string, exitCode: number | null): HarnessOutcome {
  const events = jsonLines(stdout);
  const end = pick(PiAgentEnd, events).at(-1);
  // Without agent_end (killed), fall back to the messages finished so far.
  const messages = end ? end.messages : pick(PiMessageEnd, events).map((e) => e.message);
  const last = pick(PiAssistant, messages).at(-1);
  if (!last) return failed;
  const text = last.content
    .filter((block) => block.type === "text" && block.text)
    .map((block) => block.text)
    .join("");
  const ok = end !== undefined && last.stopReason !== "error" && last.stopReason !== "aborted";
  return { finalAnswer: text || null, success: ok && exitCode === 0 };
}

// --- OpenClaw (`openclaw agent exec --json`) ---

const OpenclawEnvelope = z.looseObject({
  ok: z.boolean(),
  status: z.string().optional(),
  final: z.string().nullable().optional(),
});

/** OpenClaw prints one JSON envelope `{ok, status, final, payloads, usage, ...}` at the end. */
export function parseOpenclawJson(stdout: string, exitCode: number | null): HarnessOutcome {
  const parsed = OpenclawEnvelope.safeParse(lastJsonDocument(stdout));
  if (!parsed.success) return failed;
  const ok = parsed.data.ok && (parsed.data.status ?? "ok") === "ok";
  return { finalAnswer: parsed.data.final ?? null, success: ok && exitCode === 0 };
}

// --- Cline (`cline --json`) ---

const ClineRunResult = z.looseObject({
  type: z.literal("run_result"),
  finishReason: z.string(),
  text: z.string().nullable().optional(),
});

/** Cline prints one JSON event per line; the last, `run_result`, carries the answer and how the run ended. */
export function parseClineJson(stdout: string, exitCode: number | null): HarnessOutcome {
  let result: z.infer<typeof ClineRunResult> | undefined;
  for (const line of jsonLines(stdout)) {
    const parsed = ClineRunResult.safeParse(line);
    if (parsed.success) result = parsed.data;
  }
  if (!result) return failed;
  return {
    finalAnswer: result.text || null,
    success: result.finishReason === "completed" && exitCode === 0,
  };
}
