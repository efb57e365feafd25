/**
 * Two real harness CLIs through `polar run --upstream` against the real vLLM (scripts/engine.sh):
 * Codex (OpenAI Responses) and Qwen Code (OpenAI Chat Completions). The weights are random, so the
 * agent's text is noise; what must hold is the plumbing: the session ends by the harness's own
 * turn or length limits, every call is captured with the engine's ids and logprobs, the captures
 * reconstruct, and every trainable token is one the engine sampled.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { CLI_PRESETS, type CliHarnessName } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { POLAR, readSessionResult, runProcess } from "../e2e/polar-run-process.ts";
import { realEngine } from "../support/real-engine.ts";

const engine = await realEngine();
/*
 * Codex (Responses) and Qwen Code (Chat Completions). Tried and left out: Claude Code takes a
 * length-cut answer as "exceeded the output token maximum" and exits 1; Gemini CLI reports a
 * noise-only answer as a failed turn. Both are the harnesses' own verdicts on random text.
 */
const HARNESSES: CliHarnessName[] = ["codex", "qwen_code"];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe.skipIf(!engine.ok)(
  `real harnesses against a real vLLM (${engine.ok ? "running" : engine.reason})`,
  () => {
    for (const harness of HARNESSES) {
      it(`${harness}: the session ends cleanly and every trainable token was sampled by the engine`, async () => {
        await installHarness(CLI_PRESETS[harness], { log: (line) => console.log(`[${harness}] ${line}`) });
        const dir = await mkdtemp(join(tmpdir(), `engine-${harness}-`));
        dirs.push(dir);
        const taskId = `engine-${harness.replaceAll("_", "-")}`;
        const task = {
          task_id: taskId,
          instruction: "Write a haiku about the sea into sea.txt.",
          timeout_seconds: 240,
          // Short answers keep a random-weight call to a fraction of a second; no retries.
          agent: { harness, settings: { max_retries: 0 }, sampling: { max_tokens: 24, temperature: 1 } },
          evaluator: { strategy: "session_completed" },
        };
        const tasksFile = join(dir, "tasks.jsonl");
        await writeFile(tasksFile, `${JSON.stringify(task)}\n`);
        const out = join(dir, "out");
        const run = await runProcess(
          [process.execPath, POLAR, "run", tasksFile, "--out", out, "--upstream", engine.url],
          280_000,
        );
        const store = new DirectoryStore(join(out, "store"));
        const result = await readSessionResult(join(out, "store"), taskId, run.output);
        expect(result.status, `${result.error}\n${run.output.slice(-3000)}`).toBe("COMPLETED");
        expect(result.agent?.timed_out).toBe(false);

        const { captures } = await loadCaptures(store, taskId, result.session_id);
        expect(captures.length).toBeGreaterThan(0);
        for (const c of captures) {
          expect(c.error, JSON.stringify(c.error)).toBeNull();
          expect(c.model_served).toBe("policy");
          expect(c.response_token_ids?.length).toBeGreaterThan(0);
          expect(c.response_logprobs).toHaveLength(c.response_token_ids!.length);
          expect(c.policy_version_source).toBe("engine");
          expect(c.sampling?.logprobs_mode).toBe("raw_logprobs");
        }
        const byId = new Map(captures.map((c) => [c.capture_id, c]));
        const traces = result.trajectory.traces;
        expect(traces.length).toBeGreaterThan(0);
        const used: string[] = [];
        for (const trace of traces) {
          // A sample the harness never used (Qwen Code resends a prompt whose answer had no text:
          // `retried`) stays masked; every other sampled token is trainable, with its logprob.
          const fromCaptures = (pick: (id: string) => number[]) =>
            trace.orphan ? [] : trace.capture_ids.flatMap(pick);
          const trainable = trace.response_ids.filter((_, i) => trace.loss_mask[i] === 1);
          const lp = (trace.response_logprobs ?? []).filter((_, i) => trace.loss_mask[i] === 1);
          expect(trainable).toEqual(fromCaptures((id) => byId.get(id)?.response_token_ids ?? []));
          expect(lp).toEqual(fromCaptures((id) => byId.get(id)?.response_logprobs ?? []));
          if (trace.orphan) expect(trace.orphan_reason).toBe("retried");
          used.push(...trace.capture_ids);
        }
        expect(used.sort()).toEqual(captures.map((c) => c.capture_id).sort());
      }, 300_000);
    }
  },
);
