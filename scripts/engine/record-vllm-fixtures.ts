/**
 * Records a real vLLM's answers to the requests the proxy sends it, as fixtures the dry-run policy
 * is held to (test/unit/dry-run-policy-conformance.test.ts). Run against `scripts/engine.sh serve`:
 *
 *   node scripts/engine/record-vllm-fixtures.ts http://127.0.0.1:8000
 *
 * Writes dry-run-policy/__fixtures__/vllm-0.32/{name}.json: the request and the
 * answer (JSON, or the SSE data lines of a stream), as the engine sent them.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sseData } from "../../test/support/answer-shape.ts";
import { ENGINE_FIXTURE_DIR, ENGINE_FIXTURE_REQUESTS } from "../../test/support/engine-fixture-requests.ts";

const url = process.argv[2];
if (!url) {
  console.error("usage: node scripts/engine/record-vllm-fixtures.ts ENGINE_URL");
  process.exit(2);
}
mkdirSync(ENGINE_FIXTURE_DIR, { recursive: true });
for (const fixture of ENGINE_FIXTURE_REQUESTS) {
  const res = await fetch(`${url}${fixture.path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(fixture.body),
  });
  const text = await res.text();
  const answer = fixture.body.stream ? sseData(text) : JSON.parse(text);
  const file = join(ENGINE_FIXTURE_DIR, `${fixture.name}.json`);
  writeFileSync(file, `${JSON.stringify({ status: res.status, request: fixture, answer }, null, 1)}\n`);
  console.log(`${res.status} ${file}`);
}
