import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeUpstream {
  url: string;
  /** Chat Completions calls received (the inference the proxy paid for). */
  chatCalls: number;
  close(): Promise<void>;
}

/**
 * A vLLM-shaped upstream on 127.0.0.1: `/v1/models` and a fixed one-token chat completion with
 * token ids. `answer` replaces the chat reply (to play 401, 403, a redirect, ...).
 */
export async function startFakeUpstream(
  answer?: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FakeUpstream> {
  const state = { chatCalls: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"object":"list","data":[{"id":"m","max_model_len":4096}]}');
        return;
      }
      // As a vLLM without the RL endpoints: `/weight_info` and any other route are not there.
      if (!req.url?.startsWith("/v1/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end('{"detail":"Not Found"}');
        return;
      }
      state.chatCalls++;
      if (answer) return answer(req, res);
      answerOneToken(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get chatCalls() {
      return state.chatCalls;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** vLLM's answer to a chat call with token ids: one sampled token, "ok", with its logprob. */
export function answerOneToken(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: "c1",
      object: "chat.completion",
      created: 1,
      model: "m",
      prompt_token_ids: [1, 2, 3],
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "ok" },
          finish_reason: "stop",
          token_ids: [7],
          logprobs: { content: [{ token: "ok", logprob: -0.1, top_logprobs: [] }] },
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    }),
  );
}
