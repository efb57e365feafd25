import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "run",
  "everything in one process on the embedded defaults",
  "Usage: polar run TASKS.jsonl [--upstream URL] [--out DIR]",
);
