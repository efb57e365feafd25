/**
 * Token-in-token-out on the qwen3 preset (family-session.ts): ChatML as Qwen3 writes it: a sampled <|im_end|>, then the template's newline.
 */
import { familyEngine, familySuite } from "./family-session.ts";

const engine = await familyEngine("qwen3");
familySuite(
  {
    preset: "qwen3",
    sampledCloser: 151645,
    nextAfterCloser: 198,
  },
  engine,
);
