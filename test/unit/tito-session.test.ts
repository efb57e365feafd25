import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTrajectory } from "../../batch-runner/reconstruction/build-session.ts";
import { InvariantViolation } from "../../batch-runner/reconstruction/invariants.ts";
import { checkSplicedParents } from "../../batch-runner/reconstruction/spliced-parents.ts";
import { createPolicyApp } from "../../dry-run-policy/app.ts";
import { startNodeProxy } from "../../proxy-worker/node.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { type PolicyServer, scriptMessage, startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { chatClient, HARNESS_CLIENTS, type HarnessClient } from "../support/tito-clients.ts";
import { RECORDED_HARNESSES } from "../support/tito-recorded-clients.ts";

const KEY = "tito-test-signing-key";
const TASK = "tito-task";
const SYSTEM = "You are a careful coding agent.";
// Four calls: three tool turns and a final answer, each with reasoning the harness will drop.
const STEPS = [
  "think: First I list the files.",
  "shell: ls",
  "think: Now I read the readme.",
  "shell: cat README.md",
  "think: Then I count the lines.",
  "shell: wc -l README.md",
  "think: I have what I need.",
  "say: The readme has 3 lines.",
];
const SCRIPT = scriptMessage(STEPS);

async function runSession(
  proxy: TestProxy,
  client: HarnessClient,
  sessionId: string,
  tito: boolean,
  edit?: (body: Record<string, unknown>, turn: number) => Record<string, unknown>,
): Promise<CaptureRecord[]> {
  const token = await mintSessionToken({ sessionId, taskId: TASK, tokenInTokenOut: tito }, KEY);
  let body = client.first(SYSTEM, SCRIPT);
  for (let turn = 0; turn < 8; turn++) {
    const res = await fetch(proxy.url + client.path, {
      method: "POST",
      headers: { "content-type": "application/json", ...client.authHeader(token) },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(answer)).toBe(200);
    const call = client.toolCall(answer);
    if (!call) break;
    body = client.next(body, answer, call, `output of call ${turn + 1}\n`);
    if (edit) body = edit(body, turn + 1);
  }
  return readCaptures(proxy.store, TASK, sessionId);
}

/** A chat session's first call (a tool call) answered; `second` sends its tool output back. */
async function firstToolTurn(proxy: TestProxy, sessionId: string) {
  const token = await mintSessionToken({ sessionId, taskId: TASK, tokenInTokenOut: true }, KEY);
  const post = (body: Record<string, unknown>) =>
    fetch(proxy.url + chatClient.path, {
      method: "POST",
      headers: { "content-type": "application/json", ...chatClient.authHeader(token) },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, unknown>>);
  const first = chatClient.first(SYSTEM, SCRIPT);
  const answer = await post(first);
  const call = chatClient.toolCall(answer);
  if (!call) throw new Error("no tool call");
  return { post, second: chatClient.next(first, answer, call, "output of call 1\n") };
}

function traceCount(captures: CaptureRecord[]): number {
  return buildTrajectory(captures, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces.length;
}

async function detokenize(policy: PolicyServer, tokens: number[]): Promise<string> {
  const res = await fetch(`${policy.url}/detokenize`, { method: "POST", body: JSON.stringify({ tokens }) });
  return ((await res.json()) as { prompt: string }).prompt;
}

for (const shape of ["vllm", "sglang"] as const) {
  describe(`token-in-token-out through the proxy (${shape} shape)`, () => {
    let policy: PolicyServer;
    let proxy: TestProxy;
    beforeAll(async () => {
      policy = await startPolicy({ shape });
      proxy = await startProxy({ upstream: policy.url, signingKey: KEY, engine: shape, log: () => {} });
    });
    afterAll(async () => {
      await proxy?.close();
      await policy?.close();
    });

    const clients = shape === "vllm" ? HARNESS_CLIENTS : [chatClient];
    for (const client of clients) {
      it(`${client.name}: 4 thinking turns with reasoning dropped give 1 trace with the mode, more without`, async () => {
        const base = `${shape}-${client.path.replace(/\W+/g, "")}`;
        policy.resetCounts();
        const spliced = await runSession(proxy, client, `${base}-on`, true);
        // Both render the delta with /tokenize (SGLang 0.5.23's takes messages too): no stand-in
        // chat calls, only the session's 4 real ones.
        expect([policy.counts.tokenize, policy.counts.chat_completions]).toEqual([6, 4]);
        const plain = await runSession(proxy, client, `${base}-off`, false);
        expect(spliced).toHaveLength(4);
        expect(plain).toHaveLength(4);

        expect(spliced[0].tito).toBe("fallback:no_prior_capture");
        for (let k = 1; k < spliced.length; k++) {
          const prev = spliced[k - 1];
          const cur = spliced[k];
          expect(cur.tito).toBe("spliced");
          expect(cur.parent_capture_id).toBe(prev.capture_id);
          const head = [...(prev.prompt_token_ids ?? []), ...(prev.response_token_ids ?? [])];
          const prompt = cur.prompt_token_ids ?? [];
          expect(prompt.slice(0, head.length)).toEqual(head);
          const delta = await detokenize(policy, prompt.slice(head.length));
          // The template's close of the sampled turn (its end-of-turn token was sampled), the tool
          // output, and the generation prompt: nothing else.
          expect(delta).toBe(
            `\n<|im_start|>user\n<tool_response>\noutput of call ${k}\n\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
          );
        }
        expect(plain.every((c) => c.tito == null && c.parent_capture_id == null)).toBe(true);
        expect(traceCount(spliced)).toBe(1);
        expect(traceCount(plain)).toBeGreaterThan(1);

        // The invariant checker holds a spliced capture to its parent's ids.
        const tampered = spliced.map((c, k) =>
          k === 2 ? { ...c, prompt_token_ids: [7, ...(c.prompt_token_ids ?? []).slice(1)] } : c,
        );
        const trace = { capture_ids: spliced.map((c) => c.capture_id) };
        expect(() => checkSplicedParents([trace] as never, tampered)).toThrow(InvariantViolation);
        expect(() => checkSplicedParents([trace] as never, spliced)).not.toThrow();
      });
    }

    it("an edited earlier tool output falls back with its reason and the session still completes", async () => {
      const edited = await runSession(proxy, chatClient, `${shape}-edited`, true, (body, turn) => {
        if (turn !== 2) return body;
        const messages = (body.messages as Record<string, unknown>[]).map((m) =>
          m.role === "tool" && m.content === "output of call 1\n" ? { ...m, content: "(elided)" } : m,
        );
        return { ...body, messages };
      });
      expect(edited.map((c) => c.tito)).toEqual([
        "fallback:no_prior_capture",
        "spliced",
        "fallback:history_edited",
        "spliced",
      ]);
      expect(edited.every((c) => c.error === null)).toBe(true);
      const metrics = await (await fetch(`${proxy.url}/metrics`)).text();
      expect(metrics).toMatch(/polar_proxy_tito_calls_total\{outcome="fallback:history_edited"\} [1-9]/);
      const traces = buildTrajectory(edited, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces;
      expect(traces).toHaveLength(2);
      expect(traces[1].break_reason).toBe("history_rewrite");
    });

    it("thinking switched off mid-session falls back (the template renders the prompt's head differently)", async () => {
      const caps = await runSession(proxy, chatClient, `${shape}-kwargs`, true, (body, turn) =>
        turn === 2 ? { ...body, chat_template_kwargs: { enable_thinking: false } } : body,
      );
      expect(caps.map((c) => c.tito)).toEqual([
        "fallback:no_prior_capture",
        "spliced",
        "fallback:template_kwargs_changed",
        "spliced",
      ]);
    });

    it("a harness that retries a call gets the same spliced prompt, and reconstruction accepts it", async () => {
      const { post, second } = await firstToolTurn(proxy, `${shape}-retry`);
      await post(second);
      await post(second); // the retry
      const caps = await readCaptures(proxy.store, TASK, `${shape}-retry`);
      expect(caps.map((c) => c.tito)).toEqual(["fallback:no_prior_capture", "spliced", "spliced"]);
      expect(caps[2].parent_capture_id).toBe(caps[0].capture_id);
      expect(caps[2].prompt_token_ids).toEqual(caps[1].prompt_token_ids);
      const traces = buildTrajectory(caps, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces;
      expect(traces.flatMap((t) => t.capture_ids).sort()).toEqual(caps.map((c) => c.capture_id).sort());
    });

    it("a harness that drops a reply it could not parse branches: the next call splices onto the last kept turn", async () => {
      // mini-swe-agent's text-based mode: a reply without exactly one action is dropped from the
      // history and a format error follows, so the next call extends the turn before it, not the
      // dropped one. Two spliced children of one parent with different prompts; before, reconstruction
      // refused the session ("spliced capture ... is not in the trace of its parent").
      const { post, second } = await firstToolTurn(proxy, `${shape}-branch`);
      await post(second); // its reply is the one the harness drops
      const messages = second.messages as Record<string, unknown>[];
      await post({
        ...second,
        messages: [...messages, { role: "user", content: "Format error: one action, please." }],
      });
      const caps = await readCaptures(proxy.store, TASK, `${shape}-branch`);
      expect(caps.map((c) => c.tito)).toEqual(["fallback:no_prior_capture", "spliced", "spliced"]);
      expect([caps[1].parent_capture_id, caps[2].parent_capture_id]).toEqual([
        caps[0].capture_id,
        caps[0].capture_id,
      ]);
      const traces = buildTrajectory(caps, { strategy: "prefix_merging", config: {} }, "COMPLETED").traces;
      // Every call is in a trace: the parent chained with one child, the other its own trace.
      expect(traces.flatMap((t) => t.capture_ids).sort()).toEqual(caps.map((c) => c.capture_id).sort());
      expect(traces).toHaveLength(2);
    });

    it("a compacted history falls back as compaction", async () => {
      const compacted = await runSession(proxy, chatClient, `${shape}-compacted`, true, (body, turn) => {
        if (turn !== 3) return body;
        const messages = body.messages as Record<string, unknown>[];
        return { ...body, messages: [...messages.slice(0, 2), ...messages.slice(-2)].slice(0, 3) };
      });
      expect(compacted.map((c) => c.tito)).toContain("fallback:compaction");
      const traces = buildTrajectory(
        compacted,
        { strategy: "prefix_merging", config: {} },
        "COMPLETED",
      ).traces;
      expect(traces.map((t) => t.break_reason)).toContain("compaction");
      expect(compacted.every((c) => c.error === null)).toBe(true);
    });
  });
}

describe("an engine that ignores the token channel", () => {
  it("is caught by the prompt ids it answers with, and recorded as a fallback", async () => {
    // A vLLM release without kv_transfer_params.prompt_token_ids: it renders the messages itself.
    const { app } = createPolicyApp();
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", async () => {
        const parsed = body ? JSON.parse(body) : undefined;
        if (parsed) delete parsed.kv_transfer_params;
        const answer = await app.request(req.url ?? "/", {
          method: req.method,
          headers: { "content-type": "application/json" },
          ...(parsed ? { body: JSON.stringify(parsed) } : {}),
        });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(await answer.text());
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const proxy = await startProxy({ upstream: url, signingKey: KEY, log: () => {} });
    try {
      const caps = await runSession(proxy, chatClient, "ignored-channel", true);
      expect(caps.map((c) => c.tito)).toEqual([
        "fallback:no_prior_capture",
        ...Array(3).fill("fallback:engine_ignored_token_prompt"),
      ]);
      // Reconstruction is not held to parents the prompts do not extend.
      expect(traceCount(caps)).toBeGreaterThan(1);
    } finally {
      await proxy.close();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("vLLM /v1/completions with a token prompt (releases without a chat token channel)", () => {
  let policy: PolicyServer;
  let proxy: TestProxy;
  beforeAll(async () => {
    policy = await startPolicy();
    proxy = await startProxy({
      upstream: policy.url,
      signingKey: KEY,
      titoCompletions: { parsers: { "*": "qwen3" } },
      log: () => {},
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await policy?.close();
  });

  for (const client of HARNESS_CLIENTS) {
    it(`${client.name}: the proxy parses reasoning and tool calls itself, and the session is 1 trace`, async () => {
      const caps = await runSession(proxy, client, `cmpl-${client.path.replace(/\W+/g, "")}`, true);
      expect(caps).toHaveLength(4);
      expect(caps.slice(1).map((c) => c.tito)).toEqual(["spliced", "spliced", "spliced"]);
      // Spliced calls went to /v1/completions (vLLM's `cmpl-` ids), the first one to chat.
      const ids = caps.map((c) => (c.response as { id: string }).id);
      expect(ids[0]).toMatch(/^chatcmpl-/);
      expect(ids.slice(1).every((id) => id.startsWith("cmpl-"))).toBe(true);
      // The parsed answer reached the harness: it ran each tool call and got to the final answer.
      const message = (caps[1].response as { choices: { message: Record<string, unknown> }[] }).choices[0]
        .message;
      expect(message.reasoning).toBe("Now I read the readme.");
      expect((message.tool_calls as unknown[]).length).toBe(1);
      expect(caps.every((c) => c.response_logprobs?.length === c.response_token_ids?.length)).toBe(true);
      expect(traceCount(caps)).toBe(1);
    });
  }
});

describe("recorded harness request shapes (test/fixtures/harness-traffic)", () => {
  let policy: PolicyServer;
  let proxy: TestProxy;
  beforeAll(async () => {
    policy = await startPolicy();
    proxy = await startProxy({ upstream: policy.url, signingKey: KEY, log: () => {} });
  });
  afterAll(async () => {
    await proxy?.close();
    await policy?.close();
  });

  for (const make of RECORDED_HARNESSES) {
    const client = make(STEPS);
    it(`${client.name}: 1 trace with the mode, more without; each prompt = previous prompt + sampled + delta`, async () => {
      const base = `rec-${client.name.split(" ")[0]}`;
      const spliced = await runSession(proxy, client, `${base}-on`, true);
      const plain = await runSession(proxy, client, `${base}-off`, false);
      expect(spliced).toHaveLength(4);
      expect(plain).toHaveLength(4);
      for (let k = 1; k < spliced.length; k++) {
        const prev = spliced[k - 1];
        expect(spliced[k].tito).toBe("spliced");
        expect(spliced[k].parent_capture_id).toBe(prev.capture_id);
        const head = [...(prev.prompt_token_ids ?? []), ...(prev.response_token_ids ?? [])];
        const prompt = spliced[k].prompt_token_ids ?? [];
        expect(prompt.length).toBeGreaterThan(head.length);
        expect(prompt.slice(0, head.length)).toEqual(head);
        const delta = await detokenize(policy, prompt.slice(head.length));
        expect(delta).toMatch(
          /^\n<\|im_start\|>user\n<tool_response>\n[\s\S]*output of call \d[\s\S]*<\|im_start\|>assistant\n$/,
        );
      }
      expect(traceCount(spliced)).toBe(1);
      expect(traceCount(plain)).toBeGreaterThan(1);
    });
  }
});

describe("token-in-token-out across engine replicas (docs/routing.md)", () => {
  it("spliced calls are routed like any other and the session stays 1 trace", async () => {
    const policies = [await startPolicy(), await startPolicy()];
    const store = new MemoryStore();
    const running = await startNodeProxy({
      upstreamUrl: policies[0].url,
      upstreamUrls: [policies[1].url],
      store,
      host: "127.0.0.1",
      port: 0,
      signingKey: KEY,
      log: () => {},
    });
    const proxy: TestProxy = { url: running.url, store, close: () => running.close() };
    try {
      const caps = await runSession(proxy, chatClient, "replicas", true);
      expect(caps.slice(1).map((c) => c.tito)).toEqual(["spliced", "spliced", "spliced"]);
      expect(caps.every((c) => typeof c.replica === "string")).toBe(true);
      expect(traceCount(caps)).toBe(1);
    } finally {
      await proxy.close();
      for (const p of policies) await p.close();
    }
  });
});
