import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { chromiumMissing, launchChromium } from "../support/chromium.ts";
import { IMAGE_SESSION, IMAGE_TASK, IMAGE_WIDTHS, writeImageSession } from "../support/image-session.ts";
import { POLAR } from "./polar-run-process.ts";

/**
 * `polar view` in a real headless Chromium on a computer-use-like session that went through the
 * proxy (three screenshots, each re-sent on later turns): the session page shows each call's
 * newest screenshot, the trace page every image of the trace in engine order, read back from the
 * store's one copy of each.
 */
const missing = chromiumMissing();
if (missing) console.log(`viewer image tests skipped: ${missing}`);

describe.skipIf(missing !== null)("polar view shows the screenshots", () => {
  let dir: string;
  let viewer: ChildProcess;
  let base: string;
  let browser: BrowserContext;
  let page: Page;
  let hashes: string[];
  const pageErrors: string[] = [];
  const NOT_AN_IMAGE = "e".repeat(64);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "polar-view-images-"));
    const store = new DirectoryStore(dir);
    const { pngs } = await writeImageSession(store);
    hashes = await Promise.all(pngs.map((p) => sha256Hex(p)));
    // A blob that is HTML, not an image: the viewer must never serve it as a page.
    await store.put(keys.imageBlob(NOT_AN_IMAGE), "<html><script>alert(1)</script></html>");
    viewer = spawn(process.execPath, [POLAR, "view", dir, "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    base = await new Promise<string>((resolve, reject) => {
      let out = "";
      const take = (c: Buffer) => {
        out += c;
        const url = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
        if (url) resolve(url);
      };
      viewer.stdout?.on("data", take);
      viewer.stderr?.on("data", take);
      viewer.once("exit", (code) => reject(new Error(`polar view exited ${code}: ${out}`)));
    });
    browser = await launchChromium();
    page = await browser.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(`console: ${m.text()}`);
    });
  }, 120_000);

  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    viewer?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** [hash, naturalWidth] of every loaded image matching `testid`, in page order. */
  async function loaded(testid: string): Promise<[string, number][]> {
    const imgs = page.locator(`[data-testid=${testid}]`);
    await expect.poll(() => imgs.count()).toBeGreaterThan(0);
    await page.waitForFunction(
      (id) =>
        [...document.querySelectorAll(`[data-testid=${id}]`)].every((i) => (i as HTMLImageElement).complete),
      testid,
    );
    return imgs.evaluateAll((els) =>
      els.map(
        (e) => [e.getAttribute("data-hash") ?? "", (e as HTMLImageElement).naturalWidth] as [string, number],
      ),
    );
  }

  it("the session page shows each call's newest screenshot", async () => {
    await page.goto(`${base}/#/task/${IMAGE_TASK}/session/${IMAGE_SESSION}`);
    expect(await loaded("capture-screen")).toEqual(hashes.map((h, i) => [h, IMAGE_WIDTHS[i]]));
  });

  it("the trace page shows the trace's images in engine order", async () => {
    await page.goto(`${base}/#/task/${IMAGE_TASK}/session/${IMAGE_SESSION}/trace/0`);
    expect(await loaded("trace-image")).toEqual(hashes.map((h, i) => [h, IMAGE_WIDTHS[i]]));
  });

  it("serves only image bytes, by hash", async () => {
    const png = await fetch(`${base}/api/images/${hashes[0]}`);
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    const html = await fetch(`${base}/api/images/${NOT_AN_IMAGE}`);
    expect(html.status).toBe(422);
    expect(html.headers.get("content-type")).toContain("application/json");
    expect((await fetch(`${base}/api/images/..%2F..%2Ftasks`)).status).toBe(400);
    expect((await fetch(`${base}/api/images/${"0".repeat(64)}`)).status).toBe(404);
  });
});
