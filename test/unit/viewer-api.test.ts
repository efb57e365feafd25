import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { keys } from "../../shared/keys.ts";
import { qwen3ChatTokenIds, segmentChat } from "../../shared/node/qwen3/chat-segments.ts";
import { loadQwen3 } from "../../shared/node/qwen3/qwen3.ts";
import { tokenTexts } from "../../shared/node/qwen3/token-texts.ts";
import { MemoryStore } from "../../shared/store/memory-store.ts";
import { createViewerApp } from "../../viewer/server/app.ts";
import { mountViewer } from "../../viewer/server/mount.ts";
import { qwen3Decoder } from "../../viewer/server/server.ts";
import { rewardHistogram } from "../../viewer/server/summaries.ts";
import type { TracePayload } from "../../viewer/server/trace-payload.ts";
import {
  BREAK_SESSION,
  BREAK_TASK,
  breakTraces,
  SPREAD_TASK,
  writeViewerFixtures,
} from "../support/viewer-store.ts";

/** The viewer's JSON API and the token-stream helpers under it, without a browser. */
let app: ReturnType<typeof createViewerApp>;
let fixtures: Awaited<ReturnType<typeof writeViewerFixtures>>;
beforeAll(async () => {
  const store = new MemoryStore();
  fixtures = await writeViewerFixtures(store);
  await store.put(keys.result(SPREAD_TASK, "broken"), "{not json");
  const decoder = await qwen3Decoder();
  app = createViewerApp({ store, decoder: () => decoder });
});

const get = (path: string) => app.request(`http://127.0.0.1${path}`, { headers: { host: "127.0.0.1:8790" } });

describe("reward histogram", () => {
  it("gives a bar per value when few, a 'none' bar for missing rewards", () => {
    expect(rewardHistogram([1, 0, 1, null, 0.5])).toEqual([
      { label: "0", count: 1 },
      { label: "0.5", count: 1 },
      { label: "1", count: 2 },
      { label: "none", count: 1 },
    ]);
  });
  it("bins many distinct values into ten equal-width bins that hold every reward", () => {
    const rewards = Array.from({ length: 100 }, (_, i) => i / 99);
    const bars = rewardHistogram(rewards);
    expect(bars).toHaveLength(10);
    expect(bars.reduce((n, b) => n + b.count, 0)).toBe(100);
    expect(bars[0]?.label).toBe("0..0.1");
  });
});

describe("token stream helpers", () => {
  it("gives each token its own text, a split character on the token that completes it", () => {
    const q = loadQwen3();
    const ids = q.encode("héllo 😀 wörld");
    const texts = tokenTexts(ids, (id) => q.tokenBytes(id));
    expect(texts.join("")).toBe("héllo 😀 wörld");
    expect(texts.join("")).not.toContain("\uFFFD");
  });

  it("cuts a chat by token ids: a literal <tool_call> in the system prompt is not a tool call", () => {
    const q = loadQwen3();
    const { traces } = breakTraces(q);
    const t = traces[0];
    if (!t) throw new Error("no trace");
    const ids = [...t.prompt_ids, ...t.response_ids];
    const segs = segmentChat(
      ids,
      tokenTexts(ids, (id) => q.tokenBytes(id)),
      qwen3ChatTokenIds(q),
    );
    expect(segs[0]).toMatchObject({ kind: "system", start: 0 });
    expect(segs.filter((s) => s.kind === "tool_call")).toHaveLength(3);
    expect(segs.filter((s) => s.kind === "tool_result")).toHaveLength(3);
    // Every token belongs to exactly one segment, in order.
    expect(segs.flatMap((s) => [s.start, s.end])).toEqual([
      0,
      ...segs.slice(1).flatMap((s) => [s.start, s.start]),
      ids.length,
    ]);
  });
});

describe("viewer API", () => {
  it("lists tasks with statuses and histograms, and unreadable results with their reason", async () => {
    const body = await (await get(`/api/tasks/${SPREAD_TASK}`)).json();
    expect(body.statuses).toEqual({ COMPLETED: 4, ERROR: 1 });
    expect(body.histogram).toEqual([
      { label: "0", count: 1 },
      { label: "0.5", count: 1 },
      { label: "1", count: 2 },
      { label: "none", count: 1 },
    ]);
    expect(body.bad).toEqual([
      { key: keys.result(SPREAD_TASK, "broken"), error: expect.stringContaining("not JSON") },
    ]);
  });

  it("shows a cancelled task as cancelled, not completed, also once its shard is written", async () => {
    const store = new MemoryStore();
    await writeViewerFixtures(store);
    const decoder = await qwen3Decoder();
    const viewer = createViewerApp({ store, decoder: () => decoder });
    const json = async (path: string) =>
      (await viewer.request(`http://127.0.0.1${path}`, { headers: { host: "127.0.0.1:8790" } })).json();
    const state = async () => {
      const one = await json(`/api/tasks/${SPREAD_TASK}`);
      const all = await json("/api/tasks");
      const card = all.tasks.find((t: { task_id: string }) => t.task_id === SPREAD_TASK);
      expect(card.state).toBe(one.state);
      return one.state;
    };
    await store.put(keys.shard(SPREAD_TASK), "parquet");
    await store.put(keys.shardJsonl(SPREAD_TASK), "{}");
    expect(await state()).toBe("completed");
    await store.put(keys.cancel(SPREAD_TASK), JSON.stringify({ task_id: SPREAD_TASK }));
    expect(await state()).toBe("cancelled");
  });

  it("returns a trace with its chain break: the two sides differ at the first differing token", async () => {
    const res = await get(`/api/tasks/${BREAK_TASK}/sessions/${BREAK_SESSION}/traces/1`);
    const t = (await res.json()) as TracePayload;
    expect(t.break).toMatchObject({
      reason: "compaction",
      parent_trace: 0,
      position: fixtures.breakPosition,
    });
    expect(t.break?.parent_side?.[0]).not.toBe(t.break?.this_side?.[0]);
    expect(t.break?.common.join("")).toBe(
      t.text.slice(fixtures.breakPosition - t.break!.common.length, fixtures.breakPosition).join(""),
    );
    expect(t.extras).toMatchObject({ crossed_weight_update: true });
    expect(t.trainable).toBe(t.mask.reduce((a, m) => a + m, 0));
    expect(t.text).toHaveLength(t.ids.length);
  });

  it("rejects ids that could leave their prefix, and says what does not exist", async () => {
    expect((await get("/api/tasks/..%2Fsecrets")).status).toBe(400);
    expect((await get(`/api/tasks/${BREAK_TASK}/sessions/..%2Fx`)).status).toBe(400);
    expect((await get(`/api/tasks/${BREAK_TASK}/sessions/nobody`)).status).toBe(404);
    expect((await get(`/api/tasks/${BREAK_TASK}/sessions/${BREAK_SESSION}/traces/3`)).status).toBe(404);
    expect((await get(`/api/tasks/${BREAK_TASK}/sessions/${BREAK_SESSION}/traces/-1`)).status).toBe(400);
    expect((await get("/web/..%2Fserver%2Fapp.ts")).status).toBe(404);
    expect((await get("/vendor/preact.js")).status).toBe(404);
  });

  it("answers only requests addressed to a loopback name (no DNS rebinding)", async () => {
    const rebound = await app.request("http://127.0.0.1/api/tasks", {
      headers: { host: "attacker.example:8790" },
    });
    expect(rebound.status).toBe(403);
    expect(await rebound.text()).not.toContain(SPREAD_TASK);
    for (const host of ["127.0.0.1:8790", "localhost:8790", "[::1]:8790"]) {
      const ok = await app.request("http://127.0.0.1/api/tasks", { headers: { host } });
      expect(ok.status, host).toBe(200);
    }
  });

  it("serves the page with a CSP that allows only its own scripts and the import map", async () => {
    const res = await get("/");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
    const html = await res.text();
    expect(html).toContain('<script type="importmap">{"imports":{"preact":"./vendor/preact.mjs"');
    for (const path of [
      "/vendor/preact.mjs",
      "/vendor/hooks.mjs",
      "/vendor/htm.mjs",
      "/web/main.js",
      "/web/style.css",
    ]) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
    }
  });
});

describe("viewer mounted behind the admin token", () => {
  const TOKEN = "s3cret-admin-token";
  let parent: Hono;
  beforeAll(async () => {
    const store = new MemoryStore();
    await writeViewerFixtures(store);
    const decoder = await qwen3Decoder();
    parent = new Hono();
    parent.get("/v1/other", (c) => c.text("untouched"));
    mountViewer(parent, "/viewer", { store, decoder: () => decoder, token: TOKEN });
  });
  const at = (path: string, headers: Record<string, string> = {}) =>
    parent.request(`https://proxy.example${path}`, { headers: { host: "proxy.example", ...headers } });
  const basic = (user: string, pass: string) => `Basic ${btoa(`${user}:${pass}`)}`;

  it("asks for the token, and a browser can give it as a Basic password", async () => {
    const none = await at("/viewer/api/tasks");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Basic");
    expect(await none.text()).not.toContain(SPREAD_TASK);
    expect((await at("/viewer/api/tasks", { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await at("/viewer/api/tasks", { authorization: basic("me", "wrong") })).status).toBe(401);
    expect((await at("/viewer/api/tasks", { authorization: basic(TOKEN, "") })).status).toBe(401);
    const bearer = await at("/viewer/api/tasks", { authorization: `Bearer ${TOKEN}` });
    expect(bearer.status).toBe(200);
    expect(JSON.stringify(await bearer.json())).toContain(SPREAD_TASK);
    expect(
      (await at(`/viewer/api/tasks/${SPREAD_TASK}`, { authorization: basic("anyone", TOKEN) })).status,
    ).toBe(200);
  });

  it("serves the page at /viewer/ with relative URLs, read-only, and leaves other routes alone", async () => {
    const redirect = await at("/viewer");
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get("location")).toBe("/viewer/");
    const page = await at("/viewer/", { authorization: `Bearer ${TOKEN}` });
    const html = await page.text();
    expect(html).toContain('src="web/main.js"');
    expect(html).toContain('"preact":"./vendor/preact.mjs"');
    expect((await at("/viewer/vendor/htm.mjs", { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const post = await parent.request("https://proxy.example/viewer/api/tasks", {
      method: "POST",
      headers: { host: "proxy.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(post.status).toBe(405);
    expect(await (await at("/v1/other")).text()).toBe("untouched");
  });
});
