import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readShardParquet } from "../../batch-runner/shards/read-shard.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { mountViewer } from "../../viewer/server/mount.ts";
import { qwen3Decoder } from "../../viewer/server/server.ts";
import { chromiumMissing, launchChromium } from "../support/chromium.ts";
import { readTaskResults } from "../support/runner-stack.ts";
import {
  BREAK_SESSION,
  BREAK_TASK,
  LONG_SESSION,
  LONG_TASK,
  SPREAD_REWARDS,
  SPREAD_TASK,
  writeViewerFixtures,
} from "../support/viewer-store.ts";
import { POLAR, runProcess } from "./polar-run-process.ts";

/**
 * `polar view` in a real headless Chromium, on a store `polar run examples/tasks.jsonl` made plus
 * hand-built results with chain breaks, orphans and a 400-turn trace. Set
 * POLAR_VIEWER_SCREENSHOTS=DIR to save a screenshot of each page (docs/viewer/ holds them).
 */
const missing = chromiumMissing();
if (missing) console.log(`viewer browser tests skipped: ${missing}`);
const SHOTS = process.env.POLAR_VIEWER_SCREENSHOTS;

describe.skipIf(missing !== null)("polar view in Chromium", () => {
  let dir: string;
  let store: DirectoryStore;
  let viewer: ChildProcess;
  let base: string;
  let browser: BrowserContext;
  let page: Page;
  let fixtures: Awaited<ReturnType<typeof writeViewerFixtures>>;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "polar-view-"));
    const run = await runProcess(
      [process.execPath, POLAR, "run", "examples/tasks.jsonl", "--out", dir],
      120_000,
    );
    expect(run.code, run.output).toBe(0);
    store = new DirectoryStore(join(dir, "store"));
    fixtures = await writeViewerFixtures(store);
    // The `polar run --out` directory itself: the command finds the store inside it.
    viewer = spawn(process.execPath, [POLAR, "view", dir, "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    base = await new Promise<string>((resolve, reject) => {
      let out = "";
      viewer.stdout?.on("data", (c) => {
        out += c;
        const url = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
        if (url) resolve(url);
      });
      viewer.stderr?.on("data", (c) => {
        out += c;
      });
      viewer.once("exit", (code) => reject(new Error(`polar view exited ${code}: ${out}`)));
    });
    browser = await launchChromium();
    page = await browser.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    // Console errors include CSP violations and failed loads.
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(`console: ${m.text()}`);
    });
    // Offline and no CDN: the page asks nothing of any other origin.
    page.on("request", (r) => {
      if (!r.url().startsWith(`${base}/`) && !r.url().startsWith("data:"))
        pageErrors.push(`request to ${r.url()}`);
    });
  });

  afterEach(() => {
    // A script error, console error or foreign request fails the test that caused it.
    expect(pageErrors.splice(0)).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    viewer?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const results = (taskId: string) => readTaskResults(store, taskId);

  async function shot(name: string) {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  }

  /** label -> count of the bars in the first histogram under `scope`. */
  async function bars(scope: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const bar of await page.locator(`${scope} [data-testid=histogram] .hbar`).all()) {
      out[(await bar.getAttribute("data-label")) as string] = Number(await bar.getAttribute("data-count"));
    }
    return out;
  }

  function expectedBars(rewards: (number | null)[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of rewards)
      out[r === null ? "none" : String(r)] = (out[r === null ? "none" : String(r)] ?? 0) + 1;
    return out;
  }

  it("lists every task with its reward histogram and statuses", async () => {
    await page.goto(`${base}/#/`);
    await page.locator("[data-testid=task-card]").first().waitFor();
    const cards = await page
      .locator("[data-testid=task-card]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-task")));
    expect(cards).toEqual(
      ["count-lines", "hello-file", "per-request-builder", BREAK_TASK, SPREAD_TASK, LONG_TASK].sort(),
    );
    for (const task of ["hello-file", "count-lines", "per-request-builder"]) {
      const rs = await results(task);
      expect(rs.length).toBeGreaterThan(0);
      expect(await bars(`[data-task=${task}]`)).toEqual(expectedBars(rs.map((r) => r.reward)));
    }
    expect(await bars(`[data-task=${SPREAD_TASK}]`)).toEqual({ "0": 1, "0.5": 1, "1": 2, none: 1 });
    await shot("tasks");
  });

  it("opens a task: sessions by status, the reward histogram and a stage timeline", async () => {
    await page.goto(`${base}/#/task/${SPREAD_TASK}`);
    await page.locator("[data-testid=timeline]").waitFor();
    expect(await bars("body")).toEqual(expectedBars(SPREAD_REWARDS));
    const statuses = page.locator("[data-testid=statuses] [data-status]");
    expect(
      Object.fromEntries(
        await statuses.evaluateAll((els) =>
          els.map((e) => [e.getAttribute("data-status"), Number(e.getAttribute("data-count"))]),
        ),
      ),
    ).toEqual({ COMPLETED: 4, ERROR: 1 });
    expect(await page.locator("[data-testid=timeline] .trow").count()).toBe(SPREAD_REWARDS.length);
    expect(await page.locator("[data-testid=timeline] .track [data-stage=RUNNING]").count()).toBe(
      SPREAD_REWARDS.length,
    );
    expect(await page.locator("[data-testid=session-link]").count()).toBe(SPREAD_REWARDS.length);
    await shot("task");
  });

  it("goes from a task of `polar run` to a session: captures in order, final answer, evaluation", async () => {
    await page.goto(`${base}/#/`);
    await page.locator("[data-task=hello-file]").click();
    // The TaskRequest `polar run` stored, behind a fold.
    expect(await page.locator("[data-testid=task-definition]").textContent()).toContain(
      '"task_id": "hello-file"',
    );
    await page.locator("[data-testid=session-link]", { hasText: "hello-file-0" }).click();
    await page.locator("[data-testid=captures]").waitFor();
    const [result] = (await results("hello-file")).filter((r) => r.session_id === "hello-file-0");
    const captureKeys = await store.list(keys.capturesOfSession("hello-file", "hello-file-0"));
    const rows = page.locator("[data-testid=capture-row]");
    expect(await rows.count()).toBe(captureKeys.length);
    expect(await rows.first().textContent()).toContain("openai_chat");
    // Call order: the capture ids (ULIDs) ascend down the table.
    const ids = await rows.locator("code").evaluateAll((els) => els.map((e) => e.getAttribute("title")));
    expect(ids).toEqual(captureKeys.map((k) => k.split("/").pop()?.replace(".json.gz", "")));
    expect(await page.locator("[data-testid=final-answer]").textContent()).toBe(result?.agent?.final_answer);
    expect(await page.locator("[data-testid=evaluation]").textContent()).toContain("session_completed");
    await shot("session");
  });

  it("opens a trace: the trainable tokens shown equal the shard's mask sum", async () => {
    await page.goto(`${base}/#/task/hello-file/session/hello-file-0`);
    await page.locator("[data-testid=trace-link]").first().click();
    await page.locator("[data-testid=token-list] .tokens").first().waitFor();
    const shard = await readShardParquet((await store.get(keys.shard("hello-file"))) as Uint8Array);
    const row = shard.find((r) => r.session_id === "hello-file-0" && r.trace_index === 0);
    const maskSum = row?.loss_mask.reduce((a, m) => a + m, 0);
    expect(maskSum).toBeGreaterThan(0);
    expect(
      Number((await page.locator("[data-testid=trainable-count]").textContent())?.replace(/,/g, "")),
    ).toBe(maskSum);
    // The system prompt starts folded; the legend explains the marks.
    expect(await page.locator("[data-testid=segment][data-kind=system]").getAttribute("data-folded")).toBe(
      "true",
    );
    expect(await page.locator("[data-testid=legend]").textContent()).toContain("trainable (mask 1)");
    await shot("trace");
    await page.locator("[data-testid=unfold-all]").click();
    expect(await trainableTokensInList()).toBe(maskSum);
  });

  /** Scrolls the virtualized list top to bottom, collecting every trainable token rendered on the way. */
  function trainableTokensInList(): Promise<number> {
    return page.evaluate(async () => {
      const el = document.querySelector("[data-testid=token-list]") as HTMLElement;
      const seen = new Set<string>();
      const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      el.scrollTop = 0;
      await frames();
      for (let guard = 0; guard < 100_000; guard++) {
        for (const s of el.querySelectorAll<HTMLElement>(".tok.t")) seen.add(s.dataset.pos as string);
        if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) break;
        el.scrollTop += el.clientHeight * 0.8;
        await frames();
      }
      for (const s of el.querySelectorAll<HTMLElement>(".tok.t")) seen.add(s.dataset.pos as string);
      return seen.size;
    });
  }

  it("marks a chain break with its reason and the two prompts at the first differing token", async () => {
    await page.goto(`${base}/#/task/${BREAK_TASK}/session/${BREAK_SESSION}`);
    await page.locator("[data-testid=traces]").waitFor();
    expect(await page.locator("[data-testid=break-badge]").allTextContents()).toEqual([
      "break: compaction",
      "break: unknown",
    ]);
    expect(await page.locator("[data-testid=orphan-badge]").textContent()).toContain("no_prefix_match");
    await shot("session-breaks");
    await page.locator("[data-testid=trace-link]", { hasText: "trace 1" }).click();
    await page.locator("[data-testid=break-panel]").waitFor();
    expect(await page.locator("[data-testid=break-reason]").textContent()).toBe("compaction");
    expect(await page.locator("[data-testid=break-panel]").textContent()).toContain(
      `first differing prompt token at ${fixtures.breakPosition}`,
    );
    const diff = page.locator("[data-testid=break-diff]");
    expect(await diff.locator("del").textContent()).toMatch(/^List the files/);
    expect(await diff.locator("ins").textContent()).toMatch(/^Summary of earlier work/);
    expect(await page.locator("[data-testid=marker-break]").textContent()).toContain("compaction");
    expect(await page.locator("[data-testid=version-badge]").count()).toBe(1);
    expect(await page.locator("[data-testid=marker-version]").allTextContents()).toEqual([
      "policy version v7",
      "policy version v8",
    ]);
    await shot("trace-break");
    await page.goto(`${base}/#/task/${BREAK_TASK}/session/${BREAK_SESSION}/trace/2`);
    await page.locator("[data-testid=orphan]").waitFor();
    expect(await page.locator("[data-testid=orphan]").textContent()).toContain("no_prefix_match");
    expect(await page.locator("[data-testid=gap-badge]").textContent()).toBe("2 capture gaps");
  });

  it("serves a listed artifact as plain text and nothing else", async () => {
    const path = `${base}/api/tasks/${BREAK_TASK}/sessions/${BREAK_SESSION}/artifact`;
    const key = `${keys.artifactsOfAttempt(BREAK_TASK, BREAK_SESSION, 0)}notes.txt`;
    const ok = await page.request.get(`${path}?key=${encodeURIComponent(key)}`);
    expect(ok.status()).toBe(200);
    expect(ok.headers()["content-type"]).toMatch(/^text\/plain/);
    expect(await ok.text()).toBe("<b>kept</b> artifact text\n");
    const other = await page.request.get(`${path}?key=${encodeURIComponent(keys.task("hello-file"))}`);
    expect(other.status()).toBe(404);
  });

  it("works mounted under /viewer/ behind the admin token, the browser giving it as a password", async () => {
    const decoder = await qwen3Decoder();
    const parent = new Hono();
    mountViewer(parent, "/viewer", { store, decoder: () => decoder, token: "admin-token" });
    const server = serve({ fetch: parent.fetch, hostname: "127.0.0.1", port: 0 });
    await new Promise((r) => server.once("listening", r));
    const mounted = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ctx = await launchChromium(
      { width: 1280, height: 900 },
      { username: "trainer", password: "admin-token" },
    );
    try {
      const p = await ctx.newPage();
      const errors: string[] = [];
      p.on("console", (m) => m.type() === "error" && errors.push(m.text()));
      await p.goto(`${mounted}/viewer/#/task/${BREAK_TASK}/session/${BREAK_SESSION}/trace/1`);
      await p.locator("[data-testid=break-reason]").waitFor();
      expect(await p.locator("[data-testid=break-reason]").textContent()).toBe("compaction");
      expect(errors).toEqual([]);
    } finally {
      await ctx.close();
      server.close();
    }
  });

  it("opens a 400-turn trace with only the visible rows in the page", async () => {
    const started = performance.now();
    await page.goto(`${base}/#/task/${LONG_TASK}/session/${LONG_SESSION}/trace/0`);
    await page.locator("[data-testid=token-list] .tokens").first().waitFor();
    const openMs = performance.now() - started;
    const list = page.locator("[data-testid=token-list]");
    const rows = Number(await list.getAttribute("data-rows"));
    const tokens = await page.locator("[data-testid=trace-stats]").textContent();
    console.log(
      `400-turn trace (${tokens?.split(" tokens")[0]} tokens, ${rows} rows) opened in ${Math.round(openMs)} ms`,
    );
    expect(rows).toBeGreaterThan(1600);
    expect(await page.locator(".vrow").count()).toBeLessThan(150);
    expect(
      Number((await page.locator("[data-testid=trainable-count]").textContent())?.replace(/,/g, "")),
    ).toBe(fixtures.longTrainable);
    await shot("trace-400-turns");
    await list.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await page.getByText("Done: every directory listed.").waitFor();
    expect(await page.locator(".vrow").count()).toBeLessThan(150);
  });
});
