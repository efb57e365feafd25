/**
 * Token-in-token-out on the llama31 preset (family-session.ts): Llama 3.1: a sampled <|eom_id|> where the template closes past turns with <|eot_id|>.
 */
import { familyEngine, familySuite } from "./family-session.ts";

const engine = await familyEngine("llama31");
familySuite(
  {
    preset: "llama31",
    sampledCloser: 128008,
    nextAfterCloser: 128006,
  },
  engine,
);
