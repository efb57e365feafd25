/**
 * Provider effort names mapped onto the three levels every engine accepts as `reasoning_effort`.
 * Anthropic adds `max`, OpenAI `minimal`/`xhigh`, Gemini `MINIMAL`: they land on the nearest level.
 */
const EFFORT: Record<string, "low" | "medium" | "high"> = {
  minimal: "low",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high",
};

export function mapReasoningEffort(effort: string | undefined | null): "low" | "medium" | "high" | undefined {
  if (typeof effort !== "string") return undefined;
  return EFFORT[effort.toLowerCase()];
}
