/**
 * The evaluator of the computer-use form tasks (`evaluator.strategy:
 * "./examples/computer-use/judge.mjs"`, resolved from the runner's directory). The reward comes
 * from the app's state, never from the agent's answer: the events the app recorded in the agent's
 * work dir are replayed in a fresh runtime (same prepare steps, so its own seed) by the app's own
 * state code, and every field in `config.expect` must hold its value there.
 *
 * The log is in the work dir, written by the app as the agent's own user: only a harness that has
 * no shell can be trusted not to write it. Any other harness is refused (the session ends ERROR):
 * a shell could append the expected save itself and be paid as if the form had been filled.
 *
 *   "evaluator": {"strategy": "./examples/computer-use/judge.mjs",
 *                 "config": {"expect": {"full_name": "Ada Lovelace"}}}
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const APP_DIR = fileURLToPath(new URL("./app/", import.meta.url));
const EVENTS = ".app/events.jsonl";
/**
 * Harnesses whose agent acts only through the browser: no shell, no tool that writes a work-dir
 * path it names (browser-use's own files go to its own directory, under names without a `/`).
 */
const SHELL_FREE_HARNESSES = ["browser_use"];
/** More than any form task needs; a bigger log is read up to here (the rest is no event). */
const MAX_EVENTS_BYTES = 1 << 20;

/**
 * The app's log, read inside the agent's own sandbox (a link the agent made there resolves
 * there, never to a host file). No log: no event.
 */
async function readEvents(runtime) {
  const res = await runtime.exec(["head", "-c", String(MAX_EVENTS_BYTES), EVENTS], { timeoutMs: 30_000 });
  return res.exitCode === 0 ? res.stdout : "";
}

function expected(config) {
  const expect = config.expect;
  if (
    typeof expect !== "object" ||
    expect === null ||
    Array.isArray(expect) ||
    Object.keys(expect).length === 0
  ) {
    throw new Error('evaluator.config.expect: an object of field -> value, e.g. {"full_name": "Ada"}');
  }
  return expect;
}

export default {
  name: "computer_use_form",
  needsFreshRuntime: true,
  async evaluate(_trajectory, ctx) {
    const expect = expected(ctx.config);
    if (!SHELL_FREE_HARNESSES.includes(ctx.harness)) {
      throw new Error(
        `computer_use_form judges only ${SHELL_FREE_HARNESSES.join(", ")} sessions: harness ${ctx.harness ?? "(not given)"} can write ${EVENTS} itself, so its log proves nothing`,
      );
    }
    const events = await readEvents(ctx.runtime);
    const fresh = await ctx.freshRuntime();
    try {
      await fresh.upload(join(APP_DIR, "form-state.mjs"), ".judge/form-state.mjs");
      await fresh.upload(join(APP_DIR, "replay.mjs"), ".judge/replay.mjs");
      const staging = await mkdtemp(join(tmpdir(), "polar-cu-judge-"));
      try {
        await writeFile(join(staging, "events.jsonl"), events);
        await fresh.upload(join(staging, "events.jsonl"), ".judge/events.jsonl");
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
      const res = await fresh.exec(["node", ".judge/replay.mjs", ".app/seed.json", ".judge/events.jsonl"], {
        timeoutMs: Math.min(ctx.timeoutMs, 60_000),
      });
      if (res.exitCode !== 0) {
        throw new Error(`replay exited ${res.exitCode}: ${(res.stderr || res.stdout).trim().slice(-500)}`);
      }
      const state = JSON.parse(res.stdout.trim().split("\n").at(-1));
      const wrong = Object.entries(expect)
        .filter(([name, value]) => state.values?.[name] !== value)
        .map(([name]) => name);
      return {
        outcome_reward: wrong.length === 0 ? 1 : 0,
        metadata: {
          runtime: "fresh",
          events: events.split("\n").filter((l) => l.trim()).length,
          state,
          wrong,
        },
      };
    } finally {
      await fresh.stop().catch(() => {});
    }
  },
};
