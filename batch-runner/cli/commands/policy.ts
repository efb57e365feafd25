import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "policy",
  "the dry-run policy: a vLLM-shaped server with a real tokenizer following scripted actions",
  "Usage: polar policy [--port 8000] [--host 127.0.0.1]",
);
