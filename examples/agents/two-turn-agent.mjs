#!/usr/bin/env node
// A two-call agent for the `shell` harness (plain Node, no dependencies), used by
// examples/rl_on_cpu.py: it asks the model the instruction, then sends a follow-up user message
// in the same conversation, and writes everything the model said to answer.txt for the evaluator.
// Two calls per session make every trace multi-turn (with token-in-token-out, one spliced trace).
// Usage: node two-turn-agent.mjs "<instruction>"   (follow-up: $AGENT_FOLLOW_UP; set to "" for
// one call only, as the short-answer tasks of examples/experiments/short-answer.toml do)
import { writeFileSync } from "node:fs";

const instruction = process.argv.slice(2).join(" ");
const followUp = process.env.AGENT_FOLLOW_UP ?? "Say more, in the same way.";
const baseUrl = (process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1").replace(/\/+$/, "");
const apiKey = process.env.OPENAI_API_KEY ?? "none";
const model = process.env.OPENAI_MODEL ?? "policy";

// As the OpenAI SDK and coding-agent CLIs do, a call that finds no proxy (one restarting) or a
// 502/503/504 is sent again, here for up to about 30 s: a fleet's proxies share their state, so
// the call is the same wherever it lands.
const RETRY_STATUS = new Set([502, 503, 504]);

async function post(body) {
  for (let wait = 250; ; wait *= 2) {
    const last = wait > 16_000;
    try {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
        body,
      });
      if (last || !RETRY_STATUS.has(res.status)) return res;
      await res.arrayBuffer();
    } catch (err) {
      if (last) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function ask(messages) {
  const res = await post(JSON.stringify({ model, messages }));
  if (!res.ok) {
    process.stderr.write(`two-turn-agent: HTTP ${res.status}: ${await res.text()}\n`);
    process.exit(1);
  }
  const message = (await res.json()).choices?.[0]?.message;
  if (!message) {
    process.stderr.write("two-turn-agent: no message in the answer\n");
    process.exit(1);
  }
  return message;
}

const messages = [{ role: "user", content: instruction }];
const said = [];
for (const next of followUp === "" ? [null] : [followUp, null]) {
  const message = await ask(messages);
  // A random-weight model may open a <think> block: its reasoning is text it sampled too.
  const text = `${message.reasoning ?? message.reasoning_content ?? ""}${message.content ?? ""}`;
  said.push(text);
  messages.push({
    role: "assistant",
    content: message.content ?? "",
    ...(message.reasoning ? { reasoning: message.reasoning } : {}),
  });
  if (next !== null) messages.push({ role: "user", content: next });
}
writeFileSync("answer.txt", said.join("\n"));
process.stdout.write(`${said.join("\n")}\n`);
