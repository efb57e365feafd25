/**
 * Tool-call arguments come from a model: they may be truncated (finish `length`), not JSON at all,
 * or JSON that is not an object. Provider answers need an object (`tool_use.input`,
 * `functionCall.args`), and a bad argument string must never crash the answer.
 */
export function parseJsonObject(text: string | null | undefined): Record<string, unknown> {
  if (text === null || text === undefined || text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
    return { value };
  } catch {
    // Keep what the model wrote so the harness (and the trajectory) can still see it.
    return { _raw_arguments: text };
  }
}

/** Serializes tool input for upstream `function.arguments`; undefined becomes `{}` as chat expects. */
export function stringifyArguments(input: unknown): string {
  if (typeof input === "string") return input;
  return JSON.stringify(input ?? {});
}
