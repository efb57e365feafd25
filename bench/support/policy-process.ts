// The dry-run policy (`polar policy`) in a child process of its own, so its work is not counted in
// the benchmark process; resolves with its base URL once it listens.
import { join } from "node:path";
import { type Child, freePort, startChild } from "./children.ts";

const root = new URL("../..", import.meta.url).pathname;

export async function startPolicyProcess(): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = await startChild(
    process.execPath,
    [join(root, "bin/polar.js"), "policy", "--port", String(port)],
    { ready: (line) => line.includes("listening on") },
  );
  return { child, url: `http://127.0.0.1:${port}` };
}
