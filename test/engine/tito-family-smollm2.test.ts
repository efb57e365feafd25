/**
 * Token-in-token-out on the smollm2 preset (family-session.ts): ChatML (SmolLM2-135M-Instruct, pretrained): a sampled <|im_end|>, then the template's newline.
 */
import { familyEngine, familySuite } from "./family-session.ts";

const engine = await familyEngine("smollm2");
familySuite(
  {
    preset: "smollm2",
    sampledCloser: 2,
    nextAfterCloser: 198,
  },
  engine,
);
