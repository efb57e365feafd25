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

/** Text blocks without the billing header, joined with a blank line (Claude Code's own section separator). */
export function systemText(
  content: AnthropicRequest["system"] | AnthropicMessage["content"],
): string | undefined {
  const kept = blockTexts(content)
    .map(stripBillingHeader)
    .filter((text) => text.trim().length > 0);
  return kept.length > 0 ? kept.join("\n\n") : undefined;
}

/**
 * The top-level `system` as one system prompt. The `role:"system"` items Claude Code (>= 2.1.154)
 * puts inside `messages` stay where they are (convert-messages.ts): it adds them as a conversation
 * goes on (a sub-agent gets one after its first tool result), and merging them into the system
 * prompt would change the first tokens of the next prompt, so the turn before could not be extended
 * (a `history_rewrite` chain break, and that turn's sample taken for unused).
 */
export function collectSystemPrompt(request: AnthropicRequest): string | undefined {
  return systemText(request.system);
}
