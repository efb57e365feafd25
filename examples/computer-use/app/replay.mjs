/**
 * The judge's side of the form app, run in a fresh runtime: replays the events the agent's app
 * recorded over this runtime's own seed (its prepare steps wrote it) and prints the final state.
 *
 *   node replay.mjs <seed.json> <events.jsonl>
 */
import { readFileSync } from "node:fs";
import { parseSeed, replay } from "./form-state.mjs";

const [seedFile, eventsFile] = process.argv.slice(2);
const seed = parseSeed(readFileSync(seedFile, "utf8"));
const events = [];
for (const line of readFileSync(eventsFile, "utf8").split("\n")) {
  if (line.trim() === "") continue;
  try {
    events.push(JSON.parse(line));
  } catch {
    // A line the app did not write (cut off, or not JSON) is no event.
  }
}
console.log(JSON.stringify(replay(seed, events)));
