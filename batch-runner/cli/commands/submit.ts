import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "submit",
  "enqueue TaskRequests",
  "Usage: polar submit TASKS.jsonl --queue memory|SQS_URL --store DIR|s3://bucket/prefix [--skip-invalid]",
);
