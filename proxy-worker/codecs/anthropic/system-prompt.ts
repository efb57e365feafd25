import type { AnthropicMessage, AnthropicRequest } from "./request-schema.ts";

/**
 * Claude Code puts `x-anthropic-billing-header: cc_version=...; cch=...;` at the top of the system
 * prompt. It carries a per-request hash, so keeping it would change the first tokens of every prompt
 * and break prefix merging (and the engine's prefix cache).
 */
const BILLING_HEADER = /^\s*x-anthropic-billing-header\b/;

export function stripBillingHeader(text: string): string {
  if (!text.includes("x-anthropic-billing-header")) return text;
  return text
    .split("\n")
    .filter((line) => !BILLING_HEADER.test(line))
    .join("\n")
    .replace(/^\n+/, "");
}

function blockTexts(content: AnthropicRequest["system"] | AnthropicMessage["content"]): string[] {
  if (content === undefined) return [];
  if (typeof content === "string") return [content];
  const texts: string[] = [];
  for (const block of content) {
    if (block.type === "text" && "text" in block && typeof block.text === "string") texts.push(block.text);
  }
  return texts;
}

/**
 * One system prompt from the top-level `system` and the `role:"system"` items Claude Code
 * (>= 2.1.154) puts inside `messages`, in that order. Blocks are joined with a blank line, the
 * separator Claude Code itself uses between its prompt sections.
 */
export function collectSystemPrompt(request: AnthropicRequest): string | undefined {
  const texts = [...blockTexts(request.system)];
  for (const message of request.messages) {
    if (message.role === "system") texts.push(...blockTexts(message.content));
  }
  const kept = texts.map(stripBillingHeader).filter((text) => text.trim().length > 0);
  return kept.length > 0 ? kept.join("\n\n") : undefined;
}
