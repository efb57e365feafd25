/**
 * The recorded vLLM answers the dry-run policy is held to (test/unit/dry-run-policy-conformance.test.ts)
 * must still be what the engine answers: the same requests sent to the running vLLM give answers of
 * the recorded shape. When this fails, the engine changed: re-record with
 * `node scripts/engine/record-vllm-fixtures.ts URL` and bring the policy along.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { shapeOf, sseData, streamOutline } from "../support/answer-shape.ts";
import { ENGINE_FIXTURE_DIR, ENGINE_FIXTURE_REQUESTS } from "../support/engine-fixture-requests.ts";
import { realEngine } from "../support/real-engine.ts";

const engine = await realEngine();

describe.skipIf(!engine.ok)("the recorded vLLM fixtures are what the engine answers today", () => {
  for (const request of ENGINE_FIXTURE_REQUESTS) {
    it(request.name, async () => {
      const recorded = JSON.parse(readFileSync(join(ENGINE_FIXTURE_DIR, `${request.name}.json`), "utf8")) as {
        status: number;
        answer: unknown;
      };
      const res = await fetch(`${engine.url}${request.path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request.body),
      });
      const text = await res.text();
      expect(res.status).toBe(recorded.status);
      if (request.body.stream) {
        const chunks = sseData(text);
        expect(streamOutline(chunks)).toEqual(streamOutline(recorded.answer as unknown[]));
        expect(shapeOf(chunks)).toEqual(shapeOf(recorded.answer));
      } else {
        expect(shapeOf(JSON.parse(text))).toEqual(shapeOf(recorded.answer));
      }
    });
  }
});
