// Scratch driver (deleted before handing over): node test/e2e/try-harness.ts <harness>
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_PRESETS } from "../../batch-runner/harness/cli-presets.ts";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { runHarnessSession } from "./harness-session.ts";
import { startHarnessStack } from "./harness-stack.ts";

const name = process.argv[2] as keyof typeof CLI_PRESETS;
const preset = CLI_PRESETS[name];
const installed = await installHarness(preset, { log: console.log });
const stack = await startHarnessStack();
const instruction = [
  "Create hello.txt, read it back, then answer.",
  "```polar-script",
  "shell: echo hi > hello.txt",
  "shell: cat hello.txt",
  "say: Done.",
  "```",
].join("\n");
console.log("START", new Date().toISOString());
const run = await runHarnessSession({
  preset,
  binDir: installed!.binDir,
  stack,
  instruction,
  taskId: "t1",
  sessionId: "s1",
  sessionsRoot: await mkdtemp(join(tmpdir(), "try-")),
  traceConnects: true,
});
console.log("EXIT", run.result.exitCode, run.result.timedOut, run.result.durationMs);
console.log("STDOUT", run.result.stdout.slice(-3000));
console.log("STDERR", run.result.stderr.slice(-3000));
console.log("OUTCOME", run.outcome);
console.log(
  "CONNECTS",
  run.connects?.filter((c) => c.family !== "AF_UNIX").map((c) => `${c.address}:${c.port}`),
);
const loaded = await loadCaptures(stack.store, "t1", "s1");
for (const c of loaded.captures) {
  console.log(
    "CAPTURE",
    c.provider,
    c.path,
    c.stream,
    c.model_requested,
    c.finish_reason,
    c.error,
    c.response_token_ids?.length,
  );
}
if (process.env.DUMP) {
  const c = loaded.captures[0];
  console.log(
    JSON.stringify(
      (c?.chat_request as any)?.messages?.map((m: any) => ({
        role: m.role,
        content:
          typeof m.content === "string" ? m.content.slice(0, 300) : JSON.stringify(m.content).slice(0, 300),
      })),
      null,
      1,
    ),
  );
}
if (process.env.RECORD) {
  const { mkdir, writeFile } = await import("node:fs/promises");
  const dir = `test/fixtures/harness-traffic/${name}`;
  await mkdir(dir, { recursive: true });
  const ext = {
    anthropic: "messages",
    openai_chat: "chat-completions",
    openai_responses: "responses",
    google: "generate-content",
  }[preset.provider];
  const first = loaded.captures[0];
  const last = loaded.captures.at(-1);
  if (first) await writeFile(`${dir}/${ext}-first-call.json`, `${JSON.stringify(first.request, null, 2)}\n`);
  if (last && last !== first)
    await writeFile(`${dir}/${ext}-last-call.json`, `${JSON.stringify(last.request, null, 2)}\n`);
  await mkdir("test/fixtures/harness-output", { recursive: true });
  await writeFile(`test/fixtures/harness-output/${name}.stdout.txt`, run.result.stdout);
}
console.log("WORKDIR", run.runtime.workDir);
await stack.close();
process.exit(0);
