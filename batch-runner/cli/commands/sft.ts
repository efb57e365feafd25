import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "sft",
  "offline SFT generation with acceptance filtering",
  "Usage: polar sft TASKS.jsonl --accept EXPR --out DIR",
);
