import { readFile } from "node:fs/promises";
import { type ParsedTasks, parseTasksJsonl } from "../submit.ts";

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
  for (const e of parsed.errors) console.error(`${file}:${e.line}: ${e.message}`);
  if (parsed.errors.length > 0 && !skipInvalid) {
    console.error(`polar ${command}: ${parsed.errors.length} invalid line(s); ${refusal}`);
    return null;
  }
  return parsed;
}
