#!/usr/bin/env node
// A tiny tool-using agent for the `shell` harness (plain Node, no dependencies).
// It talks OpenAI Chat Completions to $OPENAI_BASE_URL (the Polar proxy) with a `bash` tool,
// runs each tool call in its working directory, feeds the output back, and stops at a text answer.
// Usage: node mini-agent.mjs "<instruction>"
import { spawnSync } from "node:child_process";

const instruction = process.argv.slice(2).join(" ");
const baseUrl = (process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1").replace(/\/+$/, "");
const apiKey = process.env.OPENAI_API_KEY ?? "none";
const model = process.env.OPENAI_MODEL ?? "policy";
const maxTurns = Number(process.env.MINI_AGENT_MAX_TURNS ?? 20);

const tools = [
  {
    type: "function",
    function: {
      name: "bash",
      description: "Run a shell command in the working directory and return its output.",
      parameters: {
        type: "object",
        properties: { command: { type: "string", description: "The command to run" } },
        required: ["command"],
      },
    },
  },
];

const messages = [{ role: "user", content: instruction }];

for (let turn = 0; turn < maxTurns; turn++) {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, messages, tools }),
  });
  if (!res.ok) {
    process.stderr.write(`mini-agent: HTTP ${res.status}: ${await res.text()}\n`);
    process.exit(1);
  }
  const body = await res.json();
  const message = body.choices?.[0]?.message;
  if (!message) {
    process.stderr.write(`mini-agent: no message in the answer: ${JSON.stringify(body).slice(0, 500)}\n`);
    process.exit(1);
  }
  const calls = message.tool_calls ?? [];
  messages.push({
    role: "assistant",
    content: message.content ?? null,
    ...(message.reasoning ? { reasoning: message.reasoning } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
  });
  if (calls.length === 0) {
    process.stdout.write(`${message.content ?? ""}\n`);
    process.exit(0);
  }
  for (const call of calls) {
    let command = "";
    try {
      command = JSON.parse(call.function.arguments || "{}").command ?? "";
    } catch {
      command = "";
    }
    const out = spawnSync("sh", ["-c", command], { encoding: "utf8", timeout: 60_000 });
    const output =
      `${out.stdout ?? ""}${out.stderr ?? ""}`.slice(-8000) + (out.status ? `\n(exit ${out.status})` : "");
    process.stderr.write(`$ ${command}\n${output}\n`);
    messages.push({ role: "tool", tool_call_id: call.id, content: output || "(no output)" });
  }
}
process.stderr.write(`mini-agent: no answer after ${maxTurns} turns\n`);
process.exit(2);
