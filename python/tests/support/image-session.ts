/**
 * For the Python image tests: one computer-use-like session through the real proxy (OpenAI SDK,
 * the dry-run policy as engine) into a store directory, reconstructed and written as the task's
 * group shard, as POSTRUN does. Each turn adds a screenshot and re-sends every earlier one.
 * Prints one JSON line `{task_id, session_id, images: [base64 of each PNG, in order], blobs}`.
 *   node python/tests/support/image-session.ts STORE_DIR
 */
import OpenAI from "openai";
import { reconstructSession } from "../../../batch-runner/reconstruction/build-session.ts";
import { encodeShardParquet } from "../../../batch-runner/shards/parquet-writer.ts";
import { shardRows } from "../../../batch-runner/shards/shard-rows.ts";
import { bytesToBase64 } from "../../../shared/encoding/base64.ts";
import { keys } from "../../../shared/keys.ts";
import { DirectoryStore } from "../../../shared/node/directory-store.ts";
import { mintSessionToken } from "../../../shared/session-token.ts";
import { screenshotPng } from "../../../test/support/png.ts";
import { startPolicy } from "../../../test/support/policy.ts";
import { startProxy } from "../../../test/support/proxy.ts";

const TASK = "screens";
const SESSION = "screens-0";
const store = new DirectoryStore(process.argv[2] as string);
const policy = await startPolicy();
const KEY = "image-session-key";
const proxy = await startProxy({ upstream: policy.url, store, streamMode: "synthesize", signingKey: KEY });
try {
  const token = await mintSessionToken({ sessionId: SESSION, taskId: TASK }, KEY);
  const client = new OpenAI({ apiKey: token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
  const shots = [1, 2, 3].map((i) => screenshotPng(i, 40 + i * 8, 30));
  const messages: OpenAI.ChatCompletionMessageParam[] = [];
  for (const [i, shot] of shots.entries()) {
    messages.push({
      role: "user",
      content: [
        { type: "text", text: `Screen ${i + 1}. What changed?` },
        { type: "image_url", image_url: { url: `data:image/png;base64,${bytesToBase64(shot)}` } },
      ],
    });
    const answer = await client.chat.completions.create({ model: "policy", messages, max_tokens: 16 });
    messages.push({ role: "assistant", content: answer.choices[0].message.content ?? "" });
  }
  const task = { task_id: TASK, builder: { strategy: "prefix_merging" as const, config: {} } };
  const { trajectory, attempt } = await reconstructSession({ store, task, sessionId: SESSION });
  for (const t of trajectory.traces) t.reward = 1;
  const result = {
    v: 1 as const,
    task_id: TASK,
    session_id: SESSION,
    sample_index: 0,
    attempt,
    status: "COMPLETED" as const,
    reward: 1,
    timings: {
      queued_at: null,
      init_ms: null,
      ready_wait_ms: null,
      run_ms: null,
      postrun_ms: null,
      finished_at: new Date(0).toISOString(),
    },
    agent: null,
    evaluation: null,
    trajectory,
    error: null,
  };
  const rows = shardRows([result]);
  await store.put(keys.shard(TASK), encodeShardParquet(rows));
  await store.put(keys.shardJsonl(TASK), `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
  const images = shots.map((s) => Buffer.from(s).toString("base64"));
  const blobs = await store.list("blobs/sha256/");
  process.stdout.write(
    `${JSON.stringify({ task_id: TASK, session_id: SESSION, images, blobs, traces: rows.length })}\n`,
  );
} finally {
  await proxy.close();
  await policy.close();
}
