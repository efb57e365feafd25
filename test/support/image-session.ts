import OpenAI from "openai";
import { reconstructSession } from "../../batch-runner/reconstruction/build-session.ts";
import { encodeShardParquet } from "../../batch-runner/shards/parquet-writer.ts";
import { shardRows } from "../../batch-runner/shards/shard-rows.ts";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { keys } from "../../shared/keys.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import type { ObjectStore } from "../../shared/store/object-store.ts";
import { screenshotPng } from "./png.ts";
import { startPolicy } from "./policy.ts";
import { startProxy } from "./proxy.ts";

export const IMAGE_TASK = "screens";
export const IMAGE_SESSION = "screens-0";
/** Widths of the three screenshots (all 30 px high), so readers can tell them apart. */
export const IMAGE_WIDTHS = [48, 56, 64];

/**
 * One computer-use-like session through the real proxy (OpenAI SDK, the dry-run policy as the
 * engine) into `store`, reconstructed, with its result and group shard written as POSTRUN writes
 * them. Each turn adds a screenshot and re-sends every earlier one. Returns the PNGs in order.
 */
export async function writeImageSession(store: ObjectStore): Promise<{ pngs: Uint8Array[] }> {
  const KEY = "image-session-key";
  const policy = await startPolicy();
  const proxy = await startProxy({ upstream: policy.url, store, streamMode: "synthesize", signingKey: KEY });
  try {
    const token = await mintSessionToken({ sessionId: IMAGE_SESSION, taskId: IMAGE_TASK }, KEY);
    const client = new OpenAI({ apiKey: token, baseURL: `${proxy.url}/v1`, maxRetries: 0 });
    const pngs = IMAGE_WIDTHS.map((w, i) => screenshotPng(i + 1, w, 30));
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (const [i, png] of pngs.entries()) {
      messages.push({
        role: "user",
        content: [
          { type: "text", text: `Screen ${i + 1}. What changed?` },
          { type: "image_url", image_url: { url: `data:image/png;base64,${bytesToBase64(png)}` } },
        ],
      });
      const answer = await client.chat.completions.create({ model: "policy", messages, max_tokens: 16 });
      messages.push({ role: "assistant", content: answer.choices[0].message.content ?? "" });
    }
    const task = { task_id: IMAGE_TASK, builder: { strategy: "prefix_merging" as const, config: {} } };
    const { trajectory, attempt } = await reconstructSession({ store, task, sessionId: IMAGE_SESSION });
    for (const t of trajectory.traces) t.reward = 1;
    const result: SessionResult = {
      v: 1,
      task_id: IMAGE_TASK,
      session_id: IMAGE_SESSION,
      sample_index: 0,
      attempt,
      status: "COMPLETED",
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
    await store.put(keys.result(IMAGE_TASK, IMAGE_SESSION), JSON.stringify(result));
    const rows = shardRows([result]);
    await store.put(keys.shard(IMAGE_TASK), encodeShardParquet(rows));
    await store.put(keys.shardJsonl(IMAGE_TASK), `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
    return { pngs };
  } finally {
    await proxy.close();
    await policy.close();
  }
}
