/**
 * The token-in-token-out session every template family is held to on its own real vLLM
 * (scripts/engine.sh presets; docs/tito.md "Template families"): three turns through the proxy
 * with the OpenAI SDK, the second made to end with the closing token the family samples (a logit
 * bias on it, after two free tokens). Every turn after the first must be spliced, every capture
 * must equal the engine's own greedy answer to its recorded upstream request, the sampled closer
 * must stay in the next prompt exactly once (never the template's rendered one next to it), and
 * reconstruction must give one trace whose trainable tokens are exactly the sampled ones.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTrajectory } from "../../batch-runner/reconstruction/build-session.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { upstreamRequestOf } from "../../shared/upstream-request.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import {
  ENGINE_MODEL,
  engineAnswer,
  engineRunDir,
  type RealEngine,
  realEngine,
} from "../support/real-engine.ts";

export interface FamilyCase {
  /** scripts/engine.sh preset; qwen3 uses the run's shared engine. */
  preset: "qwen3" | "smollm2" | "llama31" | "gptoss";
  /** The closing token the model samples to end turn 2. */
  sampledCloser: number;
  /** The first token the template writes after a closed turn, before the next message. */
  nextAfterCloser: number;
}

const KEY = "family-key";
const TASK = "tito-family";
const MAX = 8;

/**
 * Qwen3 (the shared engine) and SmolLM2 run everywhere the lane runs; Llama 3.1 and GPT-OSS each
 * start one more vLLM (about 2 minutes on 2 cores), so they run with POLAR_ENGINE_FAMILIES=all.
 */
const ALWAYS = ["qwen3", "smollm2"];

export async function familyEngine(preset: FamilyCase["preset"]): Promise<RealEngine> {
  const name = `preset-${preset}`;
  if (!ALWAYS.includes(preset) && process.env.POLAR_ENGINE_FAMILIES !== "all") {
    const reason = "runs with POLAR_ENGINE_FAMILIES=all";
    return { ok: false, reason, url: "", name, logFile: "" };
  }
  return preset === "qwen3" ? realEngine() : realEngine(name, ["--preset", preset]);
}

/** Stops a preset's engine when its file is done, so presets do not hold the CPU at the same time. */
export function stopEngine(engine: RealEngine): void {
  if (!engine.ok || engine.name === "shared") return;
  const pidFile = join(engineRunDir(), `${engine.name}.pid`);
  try {
    const pid = Number(readFileSync(pidFile, "utf8"));
    process.kill(-pid, "SIGTERM");
  } catch {
    // Already gone.
  }
  rmSync(pidFile, { force: true });
}

/** `more`: the family's own cases, run on the same engine before it stops. */
export function familySuite(c: FamilyCase, engine: RealEngine, more?: () => void): void {
  describe.skipIf(!engine.ok)(
    `token-in-token-out on ${c.preset} (${engine.ok ? "running" : engine.reason})`,
    () => {
      let proxy: TestProxy;
      beforeAll(async () => {
        proxy = await startProxy({ upstream: engine.url, auth: { signingKey: KEY } });
      });
      afterAll(async () => {
        await proxy?.close();
        stopEngine(engine);
      });

      it("splices every turn after the first; captures equal the engine's greedy answers", async () => {
        const sessionId = `family-${c.preset}`;
        const token = await mintSessionToken({ sessionId, taskId: TASK, tokenInTokenOut: true }, KEY);
        const client = new OpenAI({ apiKey: token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
        const base = { model: ENGINE_MODEL, max_tokens: MAX, temperature: 0 };
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Say something." }];
        const t1 = await client.chat.completions.create({ ...base, messages });
        messages.push(t1.choices[0].message, { role: "user", content: "And again." });
        // Two free tokens, then the family's closer: the turn ends the way the family ends turns.
        const closing = { logit_bias: { [String(c.sampledCloser)]: 100 }, min_tokens: 2 };
        const t2 = await client.chat.completions.create({ ...base, ...closing, messages } as never);
        expect((t2 as OpenAI.ChatCompletion).choices[0].finish_reason).toBe("stop");
        messages.push((t2 as OpenAI.ChatCompletion).choices[0].message, {
          role: "user",
          content: "Once more.",
        });
        await client.chat.completions.create({ ...base, messages });

        const caps = await readCaptures(proxy.store, TASK, sessionId);
        expect(caps.map((cap) => cap.tito)).toEqual(["fallback:no_prior_capture", "spliced", "spliced"]);
        for (const cap of caps) await expectEqualsReplay(engine.url, cap);
        const [c1, c2, c3] = caps;
        expect(c2.parent_capture_id).toBe(c1.capture_id);
        expect(c3.parent_capture_id).toBe(c2.capture_id);
        // Turn 2 ended with the sampled closer; turn 3 continues from it, with the template's next token
        // right after it (ChatML's newline, Llama's next header, harmony's next message start).
        expect(c2.response_token_ids!.at(-1)).toBe(c.sampledCloser);
        const parent = [...c2.prompt_token_ids!, ...c2.response_token_ids!];
        expect(c3.prompt_token_ids!.slice(0, parent.length)).toEqual(parent);
        expect(c3.prompt_token_ids![parent.length]).toBe(c.nextAfterCloser);

        // One trace; every trainable token is one the engine sampled, with its logprob.
        const traces = buildTrajectory(caps, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces;
        expect(traces).toHaveLength(1);
        const [trace] = traces;
        const trainable = trace.response_ids.filter((_, i) => trace.loss_mask[i] === 1);
        expect(trainable).toEqual(caps.flatMap((cap) => cap.response_token_ids!));
        const lp = (trace.response_logprobs ?? []).filter((_, i) => trace.loss_mask[i] === 1);
        expect(lp).toEqual(caps.flatMap((cap) => cap.response_logprobs!));
      }, 120_000);

      more?.();
    },
  );
}

/** A capture against the engine's own answer to its recorded upstream request, sent straight to it. */
export async function expectEqualsReplay(url: string, cap: CaptureRecord): Promise<void> {
  expect(cap.error).toBeNull();
  const sent = upstreamRequestOf(cap);
  const want = (await engineAnswer(url, sent.path, sent.body)) as {
    prompt_token_ids: number[];
    choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] }; finish_reason: string }[];
  };
  expect(cap.prompt_token_ids).toEqual(want.prompt_token_ids);
  expect(cap.response_token_ids).toEqual(want.choices[0].token_ids);
  expect(cap.response_token_ids!.length).toBeGreaterThan(0);
  expect(cap.response_logprobs).toEqual(want.choices[0].logprobs.content.map((l) => Math.fround(l.logprob)));
  expect(cap.finish_reason).toBe(want.choices[0].finish_reason);
}
