import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/**
 * A union failure (`string | blocks[]`) says only "Invalid input". The branch whose issue reaches
 * deepest into the value is the one the client meant (an array with one bad block), so report that.
 */
function mostSpecific(issue: Issue): Issue {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  let best: Issue | undefined;
  for (const branch of issue.errors) {
    if (branch.length === 0) continue;
    const candidate = mostSpecific(branch[0]);
    const nested = { ...candidate, path: [...issue.path, ...candidate.path] } as Issue;
    if (!best || nested.path.length > best.path.length) best = nested;
  }
  return best ?? issue;
}

/** The first zod issue as `path: message`, so a 400 names the field the client got wrong. */
export function describeZodError(error: z.ZodError, root = "body"): { message: string; param: string } {
  const first = error.issues[0];
  const issue = first ? mostSpecific(first) : undefined;
  const param = issue && issue.path.length > 0 ? issue.path.map(String).join(".") : root;
  return { message: `${param}: ${issue?.message ?? "invalid request"}`, param };
}
