import type { z } from "zod";
import { CodecError } from "../codec.ts";

/** `input[3].content[0].image_url` from a zod issue path, so the client learns which field to fix. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Parse a client body with zod; any mismatch becomes a 400 CodecError naming the first bad field.
 * `at` is the path of `body` inside the whole request when only a part is parsed (`input[3]`).
 */
export function parseOrThrow<T extends z.ZodType>(
  schema: T,
  body: unknown,
  what: string,
  at = "",
): z.infer<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const inner = issue ? issuePath(issue.path) : "";
  const param = at === "" ? inner : inner === "" ? at : inner.startsWith("[") ? at + inner : `${at}.${inner}`;
  const where = param === "" ? "" : ` at '${param}'`;
  throw new CodecError(
    400,
    `Invalid ${what}${where}: ${issue?.message ?? "malformed body"}`,
    param || undefined,
  );
}
