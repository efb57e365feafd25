// A zero-latency vLLM-shaped upstream for benchmarks: reads the whole body, answers a prebuilt
// completion (500 output tokens with ids and logprobs, 12,000 prompt ids), streamed when asked.
// Run as its own process: `node bench/support/fake-vllm.ts [port]`; prints `listening <port>`.
// With FAKE_VLLM_SCALED=1 the answer follows the request instead (the growth benchmark): one
// prompt id per 4 request bytes, and as many output tokens as the request's `max_tokens` (cached
// per shape, so building it is not a per-call cost).
import { createServer } from "node:http";

const SCALED = process.env.FAKE_VLLM_SCALED === "1";

function answers(PROMPT_TOKENS: number, OUTPUT_TOKENS: number): { complete: Buffer; streamed: Buffer } {
  const promptIds = Array.from({ length: PROMPT_TOKENS }, (_, i) => (i * 7919) % 151_000);
  const tokenIds = Array.from({ length: OUTPUT_TOKENS }, (_, i) => 1000 + ((i * 104_729) % 50_000));
  tokenIds[OUTPUT_TOKENS - 1] = 151_645; // <|im_end|>
  const words = tokenIds.map((_, i) => (i === OUTPUT_TOKENS - 1 ? "" : ` w${i % 97}`));
  const logprob = (i: number) => -((i * 37) % 1000) / 997 - 0.001;
  const entry = (i: number) => ({
    token: words[i],
    logprob: logprob(i),
    bytes: [...Buffer.from(words[i])],
    top_logprobs: [],
  });

  const usage = {
    prompt_tokens: PROMPT_TOKENS,
    completion_tokens: OUTPUT_TOKENS,
    total_tokens: PROMPT_TOKENS + OUTPUT_TOKENS,
  };

  const complete = Buffer.from(
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "policy",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: words.join(""), reasoning: null, tool_calls: [] },
          logprobs: { content: tokenIds.map((_, i) => entry(i)) },
          finish_reason: "stop",
          stop_reason: null,
          token_ids: tokenIds,
        },
      ],
      usage: { ...usage, prompt_tokens_details: null },
      prompt_logprobs: null,
      prompt_token_ids: promptIds,
      kv_transfer_params: null,
    }),
  );

  const chunk = (delta: unknown, extra: Record<string, unknown> = {}, finish: string | null = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "policy",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...extra }],
    })}\n\n`;

  const streamed = Buffer.from(
    [
      `data: ${JSON.stringify({
        id: "chatcmpl-bench",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "policy",
        prompt_token_ids: promptIds,
        choices: [
          { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
        ],
      })}\n\n`,
      ...tokenIds.map((id, i) =>
        chunk(
          { content: words[i] },
          { token_ids: [id], logprobs: { content: [entry(i)] } },
          i === OUTPUT_TOKENS - 1 ? "stop" : null,
        ),
      ),
      `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "policy", choices: [], usage })}\n\n`,
      "data: [DONE]\n\n",
    ].join(""),
  );
  return { complete, streamed };
}

const PROMPT_TOKENS = 12_000;
const fixed = answers(PROMPT_TOKENS, 500);
console.error(`fake-vllm: complete answer is ${fixed.complete.length} bytes`);
const scaled = new Map<string, { complete: Buffer; streamed: Buffer }>();
function scaledAnswers(body: Buffer): { complete: Buffer; streamed: Buffer } {
  const max = /"max_tokens"\s*:\s*(\d+)/.exec(body.toString("latin1", 0, Math.min(body.length, 1 << 20)));
  const shape = `${Math.max(1, Math.round(body.length / 4))}:${Math.max(1, Math.min(Number(max?.[1] ?? 500), 100_000))}`;
  let a = scaled.get(shape);
  if (!a) {
    const [p, o] = shape.split(":").map(Number);
    a = answers(p, o);
    scaled.set(shape, a);
  }
  return a;
}

const models = Buffer.from(
  JSON.stringify({
    object: "list",
    data: [
      {
        id: "policy",
        object: "model",
        created: 0,
        owned_by: "vllm",
        root: "policy",
        // Scaled: room for the largest request of the growth benchmark, so max_tokens is never cut.
        max_model_len: SCALED ? 2_000_000 : 131_072,
      },
    ],
  }),
);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json", "content-length": models.length });
      res.end(models);
      return;
    }
    const body = Buffer.concat(chunks);
    if (req.url?.startsWith("/tokenize")) {
      const out = Buffer.from(JSON.stringify({ count: PROMPT_TOKENS, max_model_len: 131_072, tokens: [] }));
      res.writeHead(200, { "content-type": "application/json", "content-length": out.length });
      res.end(out);
      return;
    }
    // A cheap look for `"stream":true` instead of a JSON parse keeps this upstream near zero cost.
    const wantsStream = /"stream"\s*:\s*true/.test(
      body.toString("latin1", 0, Math.min(body.length, 1 << 20)),
    );
    const { complete, streamed } = SCALED ? scaledAnswers(body) : fixed;
    const out = wantsStream ? streamed : complete;
    res.writeHead(200, {
      "content-type": wantsStream ? "text/event-stream" : "application/json",
      "content-length": out.length,
    });
    res.end(out);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  const addr = server.address();
  console.log(`listening ${typeof addr === "object" && addr ? addr.port : 0}`);
});
