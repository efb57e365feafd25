/**
 * Token-in-token-out on the gptoss preset (family-session.ts): GPT-OSS harmony: a sampled <|return|> where history writes <|end|>; vLLM renders harmony itself.
 */
import { familyEngine, familySuite } from "./family-session.ts";

const engine = await familyEngine("gptoss");
familySuite(
  {
    preset: "gptoss",
    sampledCloser: 200002,
    nextAfterCloser: 200006,
  },
  engine,
);
