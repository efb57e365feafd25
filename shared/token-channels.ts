/**
 * The engines' token-in-token-out channels (docs/tito.md): the one list of their names, which
 * captures record (`upstream_request.token_channel`), and where each posts its token prompt.
 */

/** Where each channel posts and where the token prompt sits in its body. */
export const TOKEN_CHANNELS = {
  /** vLLM chat (PR #48145): templating skipped, parsers still run. */
  chat_kv_transfer: { path: "/v1/chat/completions", ids: ["kv_transfer_params", "prompt_token_ids"] },
  /** SGLang chat. */
  chat_input_ids: { path: "/v1/chat/completions", ids: ["input_ids"] },
  /** vLLM `/v1/completions`, parsed by the proxy. */
  completions: { path: "/v1/completions", ids: ["prompt"] },
  /** vLLM's native token-in, token-out endpoint (`--enable-scale-out`), parsed by the proxy. */
  generate: { path: "/inference/v1/generate", ids: ["token_ids"] },
} as const;
export type TokenChannel = keyof typeof TOKEN_CHANNELS;
export const TOKEN_CHANNEL_NAMES = Object.keys(TOKEN_CHANNELS) as [TokenChannel, ...TokenChannel[]];
