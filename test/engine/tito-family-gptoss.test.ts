/**
 * Token-in-token-out on the gptoss preset (family-session.ts): GPT-OSS harmony, a sampled
 * <|return|> where history writes <|end|>, and vLLM renders harmony itself (the preset has no
 * template for /tokenize). A random-weight model never writes a tool call, so the tool-result delta
 * is rendered here directly, on the same engine, as the proxy renders it.
 */
import { expect, it } from "vitest";
import type { Gateway } from "../../proxy-worker/deps.ts";
import { familyOf } from "../../proxy-worker/tito/families.ts";
import { renderDelta } from "../../proxy-worker/tito/render-delta.ts";
import { engineChatRenderer, rendererFor } from "../../proxy-worker/tito/renderers.ts";
import { ENGINE_MODEL } from "../support/real-engine.ts";
import { familyEngine, familySuite } from "./family-session.ts";

const engine = await familyEngine("gptoss");
const CALL = 200012;

familySuite({ preset: "gptoss", sampledCloser: 200002, nextAfterCloser: 200006 }, engine, () => {
  const g = {
    upstream: { baseUrl: engine.url, fetch },
    engine: { name: "vllm" },
    tito: {},
  } as unknown as Gateway;
  const renderers = {
    template: rendererFor(g),
    engineChat: engineChatRenderer(g),
    family: () => familyOf(g, ENGINE_MODEL),
  };
  const call = {
    id: "call_7",
    type: "function" as const,
    function: { name: "read_file", arguments: '{"path":"a"}' },
  };
  const input = {
    model: ENGINE_MODEL,
    delta: [{ role: "tool" as const, tool_call_id: "call_7", content: "hello" }],
    sampled: [1000, 1001, CALL],
    finishReason: "tool_calls",
  };

  it("a tool result is named after the call it answers, rendered as the engine renders harmony", async () => {
    const answered = { role: "assistant" as const, content: null, tool_calls: [call] };
    const rendered = await renderDelta(renderers, { ...input, answered });
    expect(rendered.ok).toBe(true);
    const ids = (rendered as { ids: number[] }).ids;
    const res = await fetch(`${engine.url}/detokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: ENGINE_MODEL, tokens: ids }),
    });
    // The sampled <|call|> stays; what follows is vLLM's harmony tool message (recipient after the
    // channel, unlike the official template) and the generation prompt.
    expect(((await res.json()) as { prompt: string }).prompt).toBe(
      "<|start|>functions.read_file<|channel|>commentary to=assistant<|message|>hello<|end|><|start|>assistant",
    );
  });

  it("a tool result after a turn without a call is counted, not rendered with a nameless tool", async () => {
    const rendered = await renderDelta(renderers, {
      ...input,
      answered: { role: "assistant", content: "noise" },
      finishReason: "stop",
    });
    expect(rendered).toMatchObject({ ok: false, reason: "tool_result_without_call" });
  });
});
