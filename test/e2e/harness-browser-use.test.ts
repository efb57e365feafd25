import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installHarness } from "../../batch-runner/harness/install.ts";
import { COMPUTER_USE_PRESETS } from "../../batch-runner/harness/registry.ts";
import { loadCaptures } from "../../batch-runner/reconstruction/load-captures.ts";
import { keys } from "../../shared/keys.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { CaptureRecord } from "../../shared/schemas/capture.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";
import { CHROMIUM, exampleTasks, idleTask } from "./computer-use-tasks.ts";
import { POLAR, readSessionResult, runProcess } from "./polar-run-process.ts";

/*
 * browser-use end to end: the real package (PyPI, pinned) drives Debian's Chromium headless in the
 * bwrap runtime against the example form app (examples/computer-use/), which its `serve` setting
 * starts inside the same sandbox. The dry-run policy answers each call with the step of the task's
 * polar-script (browser-use's action JSON). One task is solved, one is half done with a claim of
 * success, and one agent says it is done without touching the page: the judge, replaying the
 * app's events in a fresh runtime, scores them 1, 0 and 0 whatever the agent claims.
 */

const preset = COMPUTER_USE_PRESETS.browser_use;
const skipReason = bwrapMissing() ?? chromiumMissing(CHROMIUM);
if (skipReason) console.log(`browser_use e2e skipped: ${skipReason}`);
/** Debian's `xvfb`: one more session runs the browser with a window on a virtual display. */
const HAVE_XVFB = spawnSync("Xvfb", ["-version"]).error === undefined;
if (!HAVE_XVFB) console.log("Xvfb missing (apt-get install xvfb): the virtual-display session is skipped");

interface Run {
  output: string;
  store: DirectoryStore;
  results: Map<string, SessionResult>;
  captures: Map<string, CaptureRecord[]>;
}

/** The bytes of every image part of a capture's request, resolved from the store when referenced. */
async function requestImages(store: DirectoryStore, capture: CaptureRecord): Promise<Uint8Array[]> {
  const images: Uint8Array[] = [];
  const messages = (capture.request as { messages?: { content?: unknown }[] }).messages ?? [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as { type?: string; image_url?: { url?: string } }[]) {
      if (part.type !== "image_url") continue;
      const url = part.image_url?.url ?? "";
      const data = /^data:image\/[a-z]+;base64,(.*)$/s.exec(url);
      if (data) {
        images.push(Buffer.from(data[1], "base64"));
        continue;
      }
      const ref = (capture.image_refs ?? []).find(
        (r) => r.field === "request" && url === `polar-image:sha256:${r.sha256}`,
      );
      expect(ref, `image part ${url.slice(0, 80)} has no image_ref`).toBeDefined();
      const bytes = await store.get(keys.imageBlob(ref?.sha256 ?? ""));
      expect(bytes, `image blob ${ref?.sha256}`).not.toBeNull();
      images.push(bytes as Uint8Array);
    }
  }
  return images;
}

const PNG = [0x89, 0x50, 0x4e, 0x47];

describe.skipIf(skipReason !== null)(
  `browser_use (PyPI browser-use ${preset.version}) through polar run`,
  () => {
    let dir: string;
    let run: Run;
    const taskIds = ["cu-profile-name", "cu-notifications", "cu-idle"];

    beforeAll(async () => {
      await installHarness(preset, { log: (line) => console.log(`[browser_use] ${line}`) });
      dir = await mkdtemp(join(tmpdir(), "harness-e2e-browser-use-"));
      const examples = await exampleTasks();
      const profile = examples.get("cu-profile-name");
      if (!profile) throw new Error("examples/computer-use/tasks.jsonl lost cu-profile-name");
      // The idle agent's browser gets a window on Xvfb (where installed): a fourth session would
      // cost this test a third more time.
      const idle = idleTask(profile);
      if (HAVE_XVFB) {
        const agent = profile.agent as { settings: Record<string, unknown> };
        idle.agent = { ...agent, settings: { ...agent.settings, config: { display: "xvfb" } } };
      }
      const tasks = [profile, examples.get("cu-notifications"), idle];
      const tasksFile = join(dir, "tasks.jsonl");
      await writeFile(tasksFile, `${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`);
      const polar = [process.execPath, POLAR, "run", tasksFile, "--out", join(dir, "out"), "--run", "3"];
      const { output } = await runProcess(polar, 100_000);
      const storeDir = join(dir, "out", "store");
      const store = new DirectoryStore(storeDir);
      const results = new Map<string, SessionResult>();
      const captures = new Map<string, CaptureRecord[]>();
      for (const id of taskIds) {
        const result = await readSessionResult(storeDir, id, output);
        results.set(id, result);
        captures.set(id, (await loadCaptures(store, id, result.session_id)).captures);
      }
      run = { output, store, results, captures };
    }, 200_000);

    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const result = (id: string) => run.results.get(id) as SessionResult;
    const account = (id: string) => JSON.stringify({ ...result(id), trajectory: undefined }).slice(0, 3000);

    it("solves the scripted task: the app's replayed state has the name (reward 1)", () => {
      const r = result("cu-profile-name");
      expect(r.status, account("cu-profile-name")).toBe("COMPLETED");
      expect(r.agent).toEqual({
        exit_code: 0,
        timed_out: false,
        final_answer: "The full name is Ada Lovelace.",
      });
      expect(r.reward).toBe(1);
      expect(r.evaluation?.metadata).toMatchObject({
        runtime: "fresh",
        events: 1,
        state: { values: { full_name: "Ada Lovelace", newsletter: true }, saves: 1 },
        wrong: [],
      });
    });

    it("scores the half-done task 0 although the agent claims success", () => {
      const r = result("cu-notifications");
      expect(r.status, account("cu-notifications")).toBe("COMPLETED");
      expect(r.agent?.final_answer).toBe("Notifications are off.");
      expect(r.reward).toBe(0);
      expect(r.evaluation?.metadata).toMatchObject({
        state: { values: { email_alerts: false, frequency: "daily" } },
        wrong: ["frequency"],
      });
    });

    it("scores an idle agent 0: no event reached the app", () => {
      const r = result("cu-idle");
      expect(r.status, account("cu-idle")).toBe("COMPLETED");
      expect(r.agent?.final_answer).toBe("Done, the name is set.");
      expect(r.reward).toBe(0);
      expect(r.evaluation?.metadata).toMatchObject({ events: 0, state: { saves: 0 }, wrong: ["full_name"] });
    });

    it.skipIf(!HAVE_XVFB)(
      "runs the idle agent's browser in a window on Xvfb inside the sandbox",
      async () => {
        const r = result("cu-idle");
        expect(r.status, account("cu-idle")).toBe("COMPLETED");
        const key = (r.artifacts ?? []).find((k) => k.endsWith("/harness/stdout.txt")) ?? "";
        const stdout = new TextDecoder().decode((await run.store.get(key)) ?? new Uint8Array());
        const line = stdout.trim().split("\n").at(-1) ?? "";
        // The driver names the X display it started; a headless run says "headless".
        expect(JSON.parse(line).polar_result.display).toMatch(/^:\d+$/);
        const [capture] = run.captures.get("cu-idle") ?? [];
        const [image] = await requestImages(run.store, capture);
        expect([...image.subarray(0, 4)]).toEqual(PNG);
      },
    );

    it("captures every call in OpenAI Chat shape with its screenshot (a PNG, kept in the store)", async () => {
      const expectedCalls = { "cu-profile-name": 2, "cu-notifications": 2, "cu-idle": 1 };
      for (const [id, count] of Object.entries(expectedCalls)) {
        const calls = run.captures.get(id) ?? [];
        expect(calls.length, id).toBe(count);
        const hashes: string[] = [];
        for (const capture of calls) {
          expect(capture.provider).toBe("openai_chat");
          expect(capture.error).toBeNull();
          expect(capture.response_token_ids?.length ?? 0).toBeGreaterThan(0);
          const images = await requestImages(run.store, capture);
          expect(images.length, `${id} ${capture.capture_id}`).toBe(1);
          expect([...images[0].subarray(0, 4)]).toEqual(PNG);
          hashes.push(
            ...(capture.image_refs ?? []).filter((r) => r.field === "request").map((r) => r.sha256),
          );
        }
        // The page changed between the two calls (name typed, "Saved." shown): two screenshots.
        if (id === "cu-profile-name") expect(new Set(hashes).size).toBe(2);
      }
    });

    it("answered each call with the script's step, which browser-use ran", () => {
      const calls = run.captures.get("cu-profile-name") ?? [];
      const answers = calls.map((c) => {
        const message = (c.response as { choices: { message: { content: string } }[] }).choices[0].message;
        return JSON.parse(message.content).action.map((a: object) => Object.keys(a)[0]);
      });
      expect(answers).toEqual([["input", "click"], ["done"]]);
    });

    it("reconstructs traces whose trainable tokens are exactly what the policy sampled", () => {
      for (const id of taskIds) {
        const calls = run.captures.get(id) ?? [];
        const byId = new Map(calls.map((c) => [c.capture_id, c]));
        const traces = result(id).trajectory.traces;
        const used: string[] = [];
        for (const trace of traces) {
          const trainable = trace.response_ids.filter((_, i) => trace.loss_mask[i] === 1);
          const sampled = trace.capture_ids.flatMap((c) => byId.get(c)?.response_token_ids ?? []);
          expect(trainable).toEqual(sampled);
          used.push(...trace.capture_ids);
        }
        // browser-use sends each step as a new conversation (system + one state message), so every
        // call is a trace of its own; none is lost.
        expect(used.sort(), id).toEqual(calls.map((c) => c.capture_id).sort());
      }
    });
  },
);
