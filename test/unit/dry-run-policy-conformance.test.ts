/**
 * The dry-run policy held to the real engine it imitates: for every request in
 * test/support/engine-fixture-requests.ts, the policy's answer must have the shape of vLLM 0.32's
 * recorded answer (dry-run-policy/__fixtures__/vllm-0.32/, recorded with
 * scripts/engine/record-vllm-fixtures.ts): the same keys with the same types, the same fields in
 * each kind of stream chunk, usage that adds up the same way, ids in the same ranges.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shapeOf, sseData, streamOutline } from "../support/answer-shape.ts";
import { ENGINE_FIXTURE_DIR, ENGINE_FIXTURE_REQUESTS } from "../support/engine-fixture-requests.ts";
import { type PolicyServer, startPolicy } from "../support/policy.ts";

interface Recorded {
  status: number;
  answer: unknown;
}

const VOCAB = 151680;
let policy: PolicyServer;
beforeAll(async () => {
  policy = await startPolicy();
});
afterAll(() => policy?.close());

async function policyAnswer(
  path: string,
  body: Record<string, unknown>,
): Promise<{ status: number; answer: unknown }> {
  const res = await fetch(`${policy.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const answer = body.stream ? sseData(text) : JSON.parse(text);
  return { status: res.status, answer };
}

/** Usage and id facts every chat answer must satisfy, the engine's and the policy's alike. */
function chatFacts(answer: Record<string, unknown>): Record<string, unknown> {
  const choice = (answer.choices as Record<string, unknown>[])[0];
  const usage = answer.usage as Record<string, number>;
  const ids = choice.token_ids as number[];
  const prompt = answer.prompt_token_ids as number[];
  const lps = (choice.logprobs as { content: { logprob: number }[] }).content;
  return {
    idPrefix: String(answer.id).replace(/-[0-9a-f]+$/, "-"),
    usageAddsUp: usage.total_tokens === usage.prompt_tokens + usage.completion_tokens,
    completionIsIds: usage.completion_tokens === ids.length,
    promptIsIds: usage.prompt_tokens === prompt.length,
    logprobPerId: lps.length === ids.length,
    idsInVocab: [...ids, ...prompt].every((t) => Number.isInteger(t) && t >= 0 && t < VOCAB),
    logprobsNonPositive: lps.every((l) => l.logprob <= 0),
  };
}

function streamFacts(chunks: unknown[]): Record<string, unknown> {
  const objs = chunks.filter((c): c is Record<string, unknown> => typeof c === "object" && c !== null);
  const ids = objs.flatMap(
    (c) => (c.choices as { token_ids?: number[] }[] | undefined)?.[0]?.token_ids ?? [],
  );
  const usage = objs.find((c) => c.usage)?.usage as Record<string, number> | undefined;
  const prompt = objs.find((c) => Array.isArray(c.prompt_token_ids))?.prompt_token_ids as
    | number[]
    | undefined;
  return {
    promptIdsOnFirstChunk: Array.isArray(objs[0]?.prompt_token_ids),
    endsWithDone: chunks.at(-1) === "[DONE]",
    usageAddsUp: usage ? usage.total_tokens === usage.prompt_tokens + usage.completion_tokens : "no usage",
    completionIsIds: usage?.completion_tokens === ids.length,
    promptIsIds: usage?.prompt_tokens === prompt?.length,
    oneIdPerChunk: objs.every((c) => {
      const t = (c.choices as { token_ids?: number[] }[] | undefined)?.[0]?.token_ids;
      return t === undefined || t === null || t.length <= 1;
    }),
  };
}

describe("the dry-run policy answers in vLLM 0.32's shapes", () => {
  for (const request of ENGINE_FIXTURE_REQUESTS) {
    it(request.name, async () => {
      const recorded = JSON.parse(
        readFileSync(join(ENGINE_FIXTURE_DIR, `${request.name}.json`), "utf8"),
      ) as Recorded;
      const mine = await policyAnswer(request.path, request.body);
      expect(mine.status).toBe(recorded.status);
      if (request.body.stream) {
        const [engine, policyChunks] = [recorded.answer as unknown[], mine.answer as unknown[]];
        expect(streamOutline(policyChunks)).toEqual(streamOutline(engine));
        expect(shapeOf(policyChunks)).toEqual(shapeOf(engine));
        expect(streamFacts(policyChunks)).toEqual(streamFacts(engine));
      } else {
        expect(shapeOf(mine.answer)).toEqual(shapeOf(recorded.answer));
        if (request.path === "/v1/chat/completions")
          expect(chatFacts(mine.answer as Record<string, unknown>)).toEqual(
            chatFacts(recorded.answer as Record<string, unknown>),
          );
      }
    });
  }
});
