// Token-in-token-out's effect on what a thinking session stores: a 100-turn session through the
// real Node proxy and the dry-run policy (Qwen3 template), whose harness drops the model's
// reasoning from history, once with the mode and once without. Reported by
// `npm run bench -- reconstruction` (docs/tito.md).

import { buildTrajectory } from "../batch-runner/reconstruction/build-session.ts";
import { startPolicyServer } from "../dry-run-policy/server.ts";
import { startNodeProxy } from "../proxy-worker/node.ts";
import { decodeCapture } from "../shared/capture-codec.ts";
import { keys } from "../shared/keys.ts";
import type { CaptureRecord } from "../shared/schemas/capture.ts";
import { mintSessionToken } from "../shared/session-token.ts";
import { MemoryStore } from "../shared/store/memory-store.ts";

const TURNS = 100;
const KEY = "bench-tito-key";
type Json = Record<string, unknown>;

function script(turns: number): string {
  const steps: string[] = [];
  for (let k = 1; k < turns; k++)
    steps.push(`think: Step ${k}: check the next file.`, `shell: cat file${k}.txt`);
  steps.push("think: Everything is checked.", "say: Done.");
  return `Follow the script.\n\n\`\`\`polar-script\n${steps.join("\n")}\n\`\`\`\n`;
}

async function session(url: string, sessionId: string, tito: boolean, turns: number): Promise<void> {
  const token = await mintSessionToken({ sessionId, taskId: "bench", tokenInTokenOut: tito }, KEY);
  const messages: Json[] = [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: script(turns) },
  ];
  const tools = [
    {
      type: "function",
      function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } } } },
    },
  ];
  for (let k = 0; k < turns; k++) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ model: "policy", messages, tools }),
    });
    if (res.status !== 200) throw new Error(`turn ${k}: ${res.status} ${await res.text()}`);
    const msg = ((await res.json()) as { choices: { message: Json }[] }).choices[0].message;
    const calls = msg.tool_calls as Json[] | undefined;
    if (!calls?.length) return;
    // The harness keeps content and tool calls, and drops the reasoning.
    messages.push({ role: "assistant", content: msg.content ?? "", tool_calls: calls });
    messages.push({ role: "tool", tool_call_id: calls[0].id, content: `contents of file ${k + 1}\n` });
  }
}

async function captures(store: MemoryStore, sessionId: string): Promise<CaptureRecord[]> {
  const out: CaptureRecord[] = [];
  for (const key of await store.list(keys.capturesOfSession("bench", sessionId))) {
    const bytes = await store.get(key);
    if (bytes) out.push(await decodeCapture(bytes));
  }
  return out;
}

/** Markdown lines: traces and tokens with and without the mode. */
export async function titoSessionRows(): Promise<string[]> {
  const policy = await startPolicyServer({ host: "127.0.0.1", port: 0 });
  const store = new MemoryStore();
  const proxy = await startNodeProxy({
    upstreamUrl: policy.url,
    store,
    host: "127.0.0.1",
    port: 0,
    signingKey: KEY,
    log: () => {},
  });
  const lines = [
    "",
    `### Token-in-token-out: a ${TURNS}-turn thinking session whose harness drops reasoning`,
    "",
    "Through the real proxy and the dry-run policy (Qwen3 template); stored trace tokens = prompt + response ids over all traces (docs/tito.md).",
    "",
    "| mode | calls | traces | stored trace tokens | captured tokens | spliced calls |",
    "|---|---:|---:|---:|---:|---:|",
  ];
  try {
    for (const tito of [false, true]) {
      const id = tito ? "tito-on" : "tito-off";
      await session(proxy.url, id, tito, TURNS);
      const caps = await captures(store, id);
      const traj = buildTrajectory(caps, { strategy: "prefix_merging", config: {} }, "COMPLETED");
      const traceTokens = traj.traces.reduce((n, t) => n + t.prompt_ids.length + t.response_ids.length, 0);
      const captured = caps.reduce(
        (n, c) => n + (c.prompt_token_ids?.length ?? 0) + (c.response_token_ids?.length ?? 0),
        0,
      );
      const spliced = caps.filter((c) => c.tito === "spliced").length;
      lines.push(
        `| ${tito ? "token-in-token-out" : "off (re-rendered)"} | ${caps.length} | ${traj.traces.length} | ${traceTokens.toLocaleString("en-US")} | ${captured.toLocaleString("en-US")} | ${spliced} |`,
      );
    }
  } finally {
    await proxy.close();
    await policy.close();
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log((await titoSessionRows()).join("\n"));
