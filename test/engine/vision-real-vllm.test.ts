/**
 * Images through the proxy to a real vision model: the `vision` preset (scripts/engine.sh; a tiny
 * random-weight Idefics3-shaped model on the Qwen tokenizer) on vLLM CPU, driven by the official
 * OpenAI and Anthropic SDKs, streamed and not. Every capture, its images restored from the store's
 * blobs, must equal the engine's own greedy answer to the recorded upstream request: prompt ids
 * with each image as the engine expanded it, sampled ids, logprobs, finish.
 *
 * Token-in-token-out with images falls back, counted as `fallback:media`, even on a turn that
 * would splice without its image: vLLM's chat token channel (`kv_transfer_params`) skips multimodal
 * processing. The last case shows what a splice would need: vLLM's generate endpoint carries the
 * image (`content_parts`) next to a token prompt and answers as the chat call did when each image
 * stands as the template's one placeholder token, but expands a capture's already-expanded ids again.
 *
 * On the same engine, one computer-use task runs end to end (./browser-use-session.ts): the real
 * browser-use drives Chromium in bwrap through `polar run`, its call's screenshot is stored once
 * and the capture equals the engine's answer; the random model's answer ends the session ERROR.
 */
import { createHash, randomUUID } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { imagePlaceholder, restoreImages } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { upstreamRequestOf } from "../../shared/upstream-request.ts";
import { screenshotPng } from "../support/png.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { ENGINE_MODEL, engineAnswer, realEngine } from "../support/real-engine.ts";
import { browserSessionMissing, runBrowserSession } from "./browser-use-session.ts";
import { stopEngine } from "./family-session.ts";

const engine = await realEngine("preset-vision", ["--preset", "vision"]);
const KEY = "vision-key";
const TASK = "vision";
const MAX = 8;
/** scripts/engine/make_tiny_vision.py: the tokens Idefics3's processor writes for one image. */
const FAKE_AROUND = 151669;
const IMAGE = 151670;
const GLOBAL_IMG = 151672;
const IMAGE_SEQ_LEN = 16;
const ONE_IMAGE = [FAKE_AROUND, GLOBAL_IMG, ...Array(IMAGE_SEQ_LEN).fill(IMAGE), FAKE_AROUND];

const PNG = [0x89, 0x50, 0x4e, 0x47];
const browserMissing = browserSessionMissing();
if (browserMissing) console.log(`the browser task on the vision engine is skipped: ${browserMissing}`);

const png = (seed: number) => bytesToBase64(screenshotPng(seed, 96, 64));
const dataUrl = (seed: number) => `data:image/png;base64,${png(seed)}`;

async function session(id: string): Promise<string> {
  return mintSessionToken({ sessionId: id, taskId: TASK, tokenInTokenOut: true }, KEY);
}

/** Where `seq` starts in `ids`, every occurrence. */
function occurrences(ids: readonly number[], seq: readonly number[]): number[] {
  const at: number[] = [];
  for (let i = 0; i + seq.length <= ids.length; i++) if (seq.every((t, j) => ids[i + j] === t)) at.push(i);
  return at;
}

describe.skipIf(!engine.ok)(
  `images to a real vision model (${engine.ok ? "running" : engine.reason})`,
  () => {
    let proxy: TestProxy;
    beforeAll(async () => {
      proxy = await startProxy({ upstream: engine.url, auth: { signingKey: KEY } });
    });
    afterAll(async () => {
      await proxy?.close();
      stopEngine(engine);
    });

    /** This file's proxy sessions: token-in-token-out asked for, every call falls back as media. */
    const viaProxy = async (sessionId: string) => ({
      caps: await readCaptures(proxy.store, TASK, sessionId),
      store: proxy.store as ObjectStore,
      tito: "fallback:media" as const,
    });

    /**
     * Captures, images restored from `store`, each against the engine's answer to what was sent.
     * `cold`: the capture was computed with no cached KV block (its session's own cache salt), so
     * the reference is asked under a fresh salt too; a long prompt answered from cached blocks
     * differs in the last bit of a few logprobs (seen here on the browser session's 5,760 tokens).
     */
    async function expectEngineFaithful(
      on: { caps: CaptureRecord[]; store: ObjectStore; tito: CaptureRecord["tito"]; cold?: boolean },
      images: number[],
    ): Promise<CaptureRecord[]> {
      const { caps, store } = on;
      expect(caps).toHaveLength(images.length);
      const out: CaptureRecord[] = [];
      for (const [i, stored] of caps.entries()) {
        expect(stored.error).toBeNull();
        expect(stored.stream_status).toBe("complete");
        expect(stored.tito).toBe(on.tito);
        const cap = await restoreImages(stored, (h) => store.get(keys.imageBlob(h)));
        const sent = upstreamRequestOf(cap);
        expect(sent.path).toBe("/v1/chat/completions");
        const body = on.cold ? { ...sent.body, cache_salt: `reference-${randomUUID()}` } : sent.body;
        const want = (await engineAnswer(engine.url, sent.path, body)) as {
          prompt_token_ids: number[];
          choices: {
            token_ids: number[];
            logprobs: { content: { logprob: number }[] };
            finish_reason: string;
          }[];
        };
        expect(cap.prompt_token_ids).toEqual(want.prompt_token_ids);
        expect(cap.response_token_ids).toEqual(want.choices[0].token_ids);
        expect(cap.response_token_ids!.length).toBeGreaterThan(0);
        expect(cap.response_logprobs).toEqual(
          want.choices[0].logprobs.content.map((l) => Math.fround(l.logprob)),
        );
        expect(cap.finish_reason).toBe(want.choices[0].finish_reason);
        // Each image part as the engine expanded it, and no other image tokens.
        const ids = cap.prompt_token_ids!;
        expect(occurrences(ids, ONE_IMAGE)).toHaveLength(images[i]);
        expect(ids.filter((t) => t === IMAGE)).toHaveLength(images[i] * IMAGE_SEQ_LEN);
        out.push(cap);
      }
      return out;
    }

    it("OpenAI Chat: an image, then a streamed turn that adds another; both fall back as media", async () => {
      const id = "openai";
      const client = new OpenAI({ apiKey: await session(id), baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      const base = { model: ENGINE_MODEL, max_tokens: MAX, temperature: 0 };
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        {
          role: "user",
          content: [
            { type: "text", text: "What is on the screen?" },
            { type: "image_url", image_url: { url: dataUrl(1) } },
          ],
        },
      ];
      const t1 = await client.chat.completions.create({ ...base, messages });
      expect(t1.choices[0].finish_reason).toBe("length");
      messages.push(t1.choices[0].message, {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: dataUrl(2) } },
          { type: "text", text: "And now?" },
        ],
      });
      let text = "";
      const stream = await client.chat.completions.create({
        ...base,
        messages,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? "";
        usage = chunk.usage ?? usage;
      }
      expect(usage?.completion_tokens).toBe(MAX);
      const [c1, c2] = await expectEngineFaithful(await viaProxy(id), [1, 2]);
      // The second prompt carries both screenshots in the order sent; the streamed text is the capture's.
      const ids2 = c2.prompt_token_ids!;
      const [first, second] = occurrences(ids2, ONE_IMAGE);
      expect(first).toBeLessThan(second);
      expect(text).toBe(
        (c2.response as { choices: { message: { content: string } }[] }).choices[0].message.content,
      );
      expect(c1.prompt_token_ids!.length).toBeLessThan(ids2.length);
    }, 120_000);

    it("Anthropic Messages: a base64 image block, streamed and not", async () => {
      const id = "anthropic";
      const client = new Anthropic({ apiKey: await session(id), baseURL: proxy.url, maxRetries: 0 });
      const req = {
        model: ENGINE_MODEL,
        max_tokens: MAX,
        temperature: 0,
        messages: [
          {
            role: "user" as const,
            content: [
              {
                type: "image" as const,
                source: { type: "base64" as const, media_type: "image/png" as const, data: png(3) },
              },
              { type: "text" as const, text: "Click the button." },
            ],
          },
        ],
      };
      const json = await client.messages.create(req);
      const streamed = await client.messages.stream(req).finalMessage();
      expect(json.stop_reason).toBe("max_tokens");
      const texts = (m: Anthropic.Message) => m.content.map((b) => ("text" in b ? b.text : b.type));
      expect(texts(streamed)).toEqual(texts(json));
      const [c1, c2] = await expectEngineFaithful(await viaProxy(id), [1, 1]);
      expect(c2.prompt_token_ids).toEqual(c1.prompt_token_ids);
      // Counted where an operator sees it: the OpenAI session's two calls and these two.
      const metrics = await (await fetch(`${proxy.url}/metrics`)).text();
      expect(metrics).toMatch(/polar_proxy_tito_calls_total\{outcome="fallback:media"\} 4\n/);
    }, 120_000);

    it("the generate endpoint carries the image with the template's one placeholder, not with the expanded ids", async () => {
      const [stored] = await readCaptures(proxy.store, TASK, "anthropic");
      const cap = await restoreImages(stored, (h) => proxy.store.get(keys.imageBlob(h)));
      const expanded = cap.prompt_token_ids!;
      const generate = async (ids: number[]) => {
        const res = await fetch(`${engine.url}/inference/v1/generate`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: ENGINE_MODEL,
            token_ids: ids,
            content_parts: [{ type: "image_url", url: dataUrl(3) }],
            sampling_params: { max_tokens: MAX, temperature: 0, logprobs: 0 },
            return_token_ids: true,
          }),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as {
          prompt_token_ids: number[];
          choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
        };
      };
      // The ids as the template renders them: the image's run collapsed to its one <image> token.
      const [at] = occurrences(expanded, ONE_IMAGE);
      const rendered = [...expanded.slice(0, at), IMAGE, ...expanded.slice(at + ONE_IMAGE.length)];
      const fromRendered = await generate(rendered);
      expect(fromRendered.prompt_token_ids).toEqual(expanded);
      expect(fromRendered.choices[0].token_ids).toEqual(cap.response_token_ids);
      expect(fromRendered.choices[0].logprobs.content.map((l) => Math.fround(l.logprob))).toEqual(
        cap.response_logprobs,
      );
      // The capture's own ids (what a splice extends) are expanded a second time: another prompt.
      const fromExpanded = await generate(expanded);
      expect(fromExpanded.prompt_token_ids.length).toBeGreaterThan(expanded.length);
    }, 60_000);

    it.skipIf(browserMissing !== null)(
      "a browser task through polar run: browser-use's call, its screenshot stored once, is the engine's answer",
      async () => {
        const run = await runBrowserSession(engine.url, MAX);
        try {
          const { result, captures, store } = run;
          // The random model, held to browser-use's JSON schema, writes whitespace up to the cap:
          // browser-use counts the truncated output a failed step and ends its one step not done,
          // which the preset reports as a harness failure: ERROR, the judge skipped (reward 0).
          expect(result.status, run.output.slice(-3000)).toBe("ERROR");
          expect(result.error).toBe("the harness exited 0 but its output reports failure (browser_use)");
          expect(result.agent).toEqual({ exit_code: 0, timed_out: false, final_answer: null });
          expect(result.reward).toBe(0);
          expect(result.evaluation?.metadata).toEqual({ skipped: "session is ERROR" });
          const stdoutKey = (result.artifacts ?? []).find((k) => k.endsWith("/harness/stdout.txt")) ?? "";
          const stdout = new TextDecoder().decode((await store.get(stdoutKey)) ?? new Uint8Array());
          const driver = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}").polar_result;
          expect(driver).toMatchObject({ done: false, answer: null, display: "headless" });
          expect(driver.errors[0]).toMatch(/^Model output was truncated/);

          // One step, one call: OpenAI Chat with one screenshot, a PNG kept as a reference only.
          expect(captures).toHaveLength(1);
          const hashes = new Set<string>();
          for (const c of captures) {
            expect(c.provider).toBe("openai_chat");
            expect(c.model_served).toBe("policy");
            const refs = (c.image_refs ?? []).filter((r) => r.field === "request");
            expect(refs).toHaveLength(1);
            expect(refs[0].media_type).toBe("image/png");
            const request = JSON.stringify(c.request);
            expect(request).not.toContain("data:image");
            expect(request).toContain(imagePlaceholder(refs[0].sha256));
            for (const r of c.image_refs ?? []) hashes.add(r.sha256);
          }
          // One blob per distinct screenshot, named by its bytes' hash.
          const blobs = await store.list("blobs/sha256/");
          expect(blobs.sort()).toEqual([...hashes].map((h) => keys.imageBlob(h)).sort());
          for (const h of hashes) {
            const bytes = (await store.get(keys.imageBlob(h))) ?? new Uint8Array();
            expect(createHash("sha256").update(bytes).digest("hex")).toBe(h);
            expect([...bytes.subarray(0, 4)]).toEqual(PNG);
          }

          // Restored, the call equals the engine's greedy answer, its screenshot one expanded image.
          const [cap] = await expectEngineFaithful({ caps: captures, store, tito: null, cold: true }, [1]);

          // Reconstructed: one trace per call (each browser-use step is a new conversation) with the
          // engine's ids and the screenshot's hash; nothing trainable in an ERROR session.
          const traces = result.trajectory.traces;
          expect(traces).toHaveLength(1);
          expect(traces[0].capture_ids).toEqual([cap.capture_id]);
          expect(traces[0].prompt_ids).toEqual(cap.prompt_token_ids);
          expect(traces[0].response_ids).toEqual(cap.response_token_ids);
          expect(traces[0].image_hashes).toEqual([...hashes]);
          expect(traces[0].metadata).toMatchObject({ masked: "session_error" });
          expect(traces[0].loss_mask.every((m) => m === 0)).toBe(true);
        } finally {
          await run.cleanup();
        }
      },
      300_000,
    );
  },
);
