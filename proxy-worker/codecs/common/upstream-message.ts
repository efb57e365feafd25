import type { ChatChoice, ChatResponse } from "../../chat/types.ts";

/** The first choice, or an empty stand-in: a malformed upstream answer must still encode. */
export function firstChoice(chat: ChatResponse): ChatChoice {
  return (
    chat.choices?.[0] ?? {
      index: 0,
      message: { role: "assistant", content: null },
      finish_reason: "stop",
    }
  );
}

/** vLLM >= 0.16 answers with `reasoning`, older versions and SGLang with `reasoning_content`. */
export function upstreamReasoning(choice: ChatChoice): string {
  const { reasoning, reasoning_content } = choice.message;
  if (typeof reasoning === "string" && reasoning.length > 0) return reasoning;
  if (typeof reasoning_content === "string") return reasoning_content;
  return "";
}

export function upstreamText(choice: ChatChoice): string {
  return typeof choice.message.content === "string" ? choice.message.content : "";
}
