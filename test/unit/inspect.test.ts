import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { shardRows } from "../../batch-runner/shards/shard-rows.ts";
import inspect from "../../cli/commands/inspect.ts";
import { encodeCapture } from "../../shared/capture-codec.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { SessionResult } from "../../shared/schemas/trajectory.ts";
import { capture } from "../support/reconstruction-captures.ts";
import { BREAK_SESSION, BREAK_TASK, SPREAD_TASK, writeViewerFixtures } from "../support/viewer-store.ts";

/** `polar inspect` on hand-built results: legend, filters, folding, markers, store summary, captures. */
let dir: string;
let storeDir: string;
let store: DirectoryStore;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "polar-inspect-"));
  // Shaped like `polar run --out DIR`: the store one level down.
  storeDir = join(dir, "store");
  store = new DirectoryStore(storeDir);
  await writeViewerFixtures(store);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let out: string[];
let err: string[];
beforeEach(() => {
  out = [];
  err = [];
  vi.spyOn(console, "log").mockImplementation((...a) => void out.push(a.join(" ")));
  vi.spyOn(console, "error").mockImplementation((...a) => void err.push(a.join(" ")));
});
afterEach(() => vi.restoreAllMocks());

const text = () => out.join("\n");
const breakResult = () => join(storeDir, keys.result(BREAK_TASK, BREAK_SESSION));

describe("polar inspect", () => {
  it("summarizes a run directory per task: sessions by status, mean reward, breaks and orphans", async () => {
    expect(await inspect.run([dir])).toBe(0);
    const lines = text().split("\n");
    expect(lines[0]).toContain("store, 3 tasks, 7 session results");
    expect(lines.find((l) => l.includes(`${SPREAD_TASK}:`))).toContain(
      "5 sessions (COMPLETED 4, ERROR 1), mean reward 0.6250 over 4, 5 traces",
    );
    expect(lines.find((l) => l.includes(`${BREAK_TASK}:`))).toContain(
      "breaks compaction 1, unknown 1; 1 orphans; 2 capture gaps",
    );
  });

  it("prints a legend, folds the system prompt and shows break and orphan flags per trace", async () => {
    expect(await inspect.run([breakResult(), "--no-color"])).toBe(0);
    const t = text();
    expect(t).toContain("legend: ⟦...⟧ = trainable (mask 1");
    expect(t).toContain("break compaction from trace 0, crossed weight update");
    expect(t).toContain("break unknown, orphan (no_prefix_match), 2 capture gaps");
    expect(t).toContain("2 capture gaps; 1 orphans; break reasons compaction 1, unknown 1");
    expect(t.match(/«system prompt: \d+ tokens, folded/g)).toHaveLength(3);
    expect(t).not.toContain("You are a coding agent");
  });

  it("marks trainable spans with markers that cannot collide with the text", async () => {
    expect(await inspect.run([breakResult(), "--trace", "0", "--system", "--no-color"])).toBe(0);
    const t = text();
    // The system prompt writes `[[this]]` and `⟦that⟧` literally: the first is plain text, the second escaped.
    expect(t).toContain("Literal markers such as [[this]] and \\u27e6that\\u27e7 appear");
    const body = t.slice(t.indexOf("--- "));
    const spans = [...body.matchAll(/⟦([^⟦⟧]*)⟧/g)].map((m) => m[1] as string);
    expect(body.split("⟦").length - 1).toBe(spans.length);
    expect(body.split("⟧").length - 1).toBe(spans.length);
    // Every trainable token is inside a marker, and nothing else is.
    const result = SessionResult.parse(JSON.parse(await readText(breakResult())));
    const row = shardRows([result])[0];
    const q = loadQwen3();
    const trainable = row?.response_ids.filter((_, i) => row.loss_mask[i] === 1) ?? [];
    expect(spans.join("")).toBe(q.decode(trainable, { skipSpecialTokens: false }));
  });

  it("filters with --session and --trace, and says when nothing matches", async () => {
    expect(await inspect.run([dir, "--session", BREAK_SESSION, "--trace", "1", "--no-text"])).toBe(0);
    expect(text()).toContain("1 traces from 1 sessions");
    expect(text()).toContain(`[${BREAK_SESSION} #0 trace 1]`);
    expect(text()).not.toContain("trace 0]");
    out = [];
    expect(await inspect.run([breakResult(), "--trace", "7"])).toBe(1);
    expect(err.join("\n")).toContain("no trace matches --trace 7 (3 traces");
    expect(await inspect.run([dir, "--session", "nobody"])).toBe(1);
    expect(err.join("\n")).toContain("no result for session nobody");
    await expect(inspect.run([breakResult(), "--trace", "x"])).rejects.toThrow(/--trace expects/);
  });

  it("reads a raw capture file: provider, model, tokens, latency, policy versions", async () => {
    const q = loadQwen3();
    const prompt = q.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    const response = [...q.encode("Hello there"), q.imEndId];
    const rec = capture(prompt, response, {
      task_id: "t",
      session_id: "s",
      policy_version: "v3",
      policy_version_end: "v4",
      ended_at: "2026-01-01T00:00:01.250Z",
    });
    const file = join(dir, "one.json.gz");
    writeFileSync(file, await encodeCapture(rec));
    expect(await inspect.run([file, "--no-color"])).toBe(0);
    const t = text();
    expect(t).toContain(`${file}: capture`);
    expect(t).toContain("openai_chat /v1/chat/completions  model policy");
    expect(t).toContain("latency 1250 ms");
    expect(t).toContain("policy v3 -> v4 (crossed a weight update)");
    expect(t).toContain(`${prompt.length} prompt tokens, ${response.length} response tokens`);
    expect(t).toContain("⟦Hello there<|im_end|>⟧");
    writeFileSync(join(dir, "bad.json.gz"), "not gzip");
    expect(await inspect.run([join(dir, "bad.json.gz")])).toBe(1);
    expect(err.join("\n")).toContain("stored capture is unreadable");
  });

  it("shows the break columns of a shard that has them", async () => {
    const result = SessionResult.parse(JSON.parse(await readText(breakResult())));
    const rows = shardRows([result]).map((r, i) => ({
      ...r,
      break_reason: i === 1 ? "history_rewrite" : null,
      parent_trace: i === 1 ? 0 : null,
      orphan: false,
      orphan_reason: null,
      capture_gaps: 0,
      crossed_weight_update: false,
      version_spans: "[]",
    }));
    const file = join(dir, "with-breaks.jsonl");
    writeFileSync(file, `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
    expect(await inspect.run([file, "--no-text"])).toBe(0);
    expect(text()).toContain("break history_rewrite from trace 0");
    expect(text().match(/break /g)).toHaveLength(1);
  });
});

async function readText(path: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  return readFile(path, "utf8");
}
