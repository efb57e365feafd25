import { readFile } from "node:fs/promises";
import { type ParsedTasks, parseTasksJsonl } from "../batch-runner/submit.ts";

/**
 * Reads and validates a TASKS.jsonl file, printing each bad line as `file:line: message`.
 * Returns null (after saying why on stderr) when the command must stop with exit code 1: the file
 * cannot be read, or it has invalid lines and `--skip-invalid` was not given.
 * `refusal` ends the message for the latter, e.g. "nothing run (use --skip-invalid to run the rest)".
 */
export async function readTasksFile(
  command: string,
  file: string,
  skipInvalid: boolean,
  refusal: string,
): Promise<ParsedTasks | null> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    console.error(`polar ${command}: cannot read ${file}: ${(err as Error).message}`);
    return null;
  }
  const parsed = parseTasksJsonl(text);
  const document = prettyPrinted(text, parsed);
  if (document) {
    // One error per line of a pretty-printed task would bury the one thing to fix.
    console.error(`${file}: ${document}`);
    console.error(
      `polar ${command}: ${file} is not a task file; ${refusal.replace(/ \(use --skip-invalid.*\)$/, "")}`,
    );
    return null;
  }
  for (const e of parsed.errors) console.error(`${file}:${e.line}: ${e.message}`);
  if (parsed.errors.some((e) => e.message.startsWith("not valid JSON")))
    console.error(`${file}: a task file holds one TaskRequest per line (JSON Lines), each task on one line`);
  if (parsed.errors.length > 0 && !skipInvalid) {
    console.error(`polar ${command}: ${parsed.errors.length} invalid line(s); ${refusal}`);
    return null;
  }
  return parsed;
}

/**
 * Why the file is not JSON Lines when it is one JSON document spread over several lines (a task or a
 * list of tasks, pretty-printed), else null.
 */
function prettyPrinted(text: string, parsed: ParsedTasks): string | null {
  if (parsed.errors.length < 2) return null;
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    return null;
  }
  const what = Array.isArray(whole) ? `a JSON array of ${whole.length} item(s)` : "one JSON document";
  const lines = text.trimEnd().split("\n").length;
  return `${what} over ${lines} lines; a task file holds one TaskRequest per line (JSON Lines): write each task on a single line, e.g. with \`jq -c '${Array.isArray(whole) ? ".[]" : "."}' FILE\``;
}
