import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "proxy",
  "the gateway on Node",
  "Usage: polar proxy --upstream URL [--engine vllm|sglang] [--port 8787] [--host 127.0.0.1] [--store DIR|s3://bucket/prefix] [--auth off]",
);
