/**
 * One Server-Sent Events frame as wire text. `event` is optional because some providers
 * (OpenAI Chat, Google) send `data:` lines only, while others (Responses, Anthropic) name every frame.
 * JSON.stringify never emits raw newlines, so one `data:` line always holds the whole payload.
 */
export function sseFrame(data: unknown, event?: string): string {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  return (event === undefined ? "" : `event: ${event}\n`) + `data: ${payload}\n\n`;
}
