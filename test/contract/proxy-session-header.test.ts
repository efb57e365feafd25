import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { startProxy, type TestProxy } from "../support/proxy.ts";

/**
 * The proxy names the session to the engine (x-polar-session-id, shared/upstream-session.ts), so the
 * dry-run policy can give each sample of a task its own script alternative: on buffered calls and on
 * live streams alike.
 */
const SCRIPT = scriptMessage(["say: Alternative A.", "---", "say: Alternative B."]);

let policy: PolicyServer;
const proxies: TestProxy[] = [];
beforeAll(async () => {
  policy = await startPolicy();
  for (const streamMode of ["synthesize", "live"] as const) {
    proxies.push(await startProxy({ upstream: policy.url, streamMode, log: () => {} }));
  }
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await policy?.close();
});

async function answer(proxy: TestProxy, session: string, stream: boolean): Promise<string> {
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${session}` },
    body: JSON.stringify({ model: "m", stream, messages: [{ role: "user", content: SCRIPT }] }),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  if (!stream) return text;
  // A live stream sends a token a chunk: join the content deltas.
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "")
    .join("");
}

describe("the session reaches the engine", () => {
  for (const [i, mode] of ["synthesize", "live"].entries()) {
    for (const stream of [false, true]) {
      it(`${mode} mode, stream ${stream}: samples 0, 1, 2 answer A, B, A`, async () => {
        const texts = [];
        for (const sample of [0, 1, 2]) texts.push(await answer(proxies[i], `grp-${sample}`, stream));
        const which = texts.map((t) => (/Alternative A/.test(t) ? "A" : /Alternative B/.test(t) ? "B" : "?"));
        expect(which).toEqual(["A", "B", "A"]);
      });
    }
  }
});
