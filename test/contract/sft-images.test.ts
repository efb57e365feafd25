import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runSft } from "../../sft/sft-run.ts";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { DirectoryStore } from "../../shared/node/directory-store.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import { IMAGE_TASK, writeImageSession } from "../support/image-session.ts";

/**
 * `polar sft` over a session whose calls carried screenshots: the chat record holds the
 * conversation as the client sent it, images inline (the capture stores them once, by reference).
 */
describe("SFT records of an image session", () => {
  const dir = mkdtempSync(join(tmpdir(), "polar-sft-images-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("carry each screenshot as the data URL the harness sent", async () => {
    let pngs: Uint8Array[] = [];
    const stats = await runSft({
      tasks: [TaskRequest.parse({ task_id: IMAGE_TASK, instruction: "x", agent: { harness: "shell" } })],
      accept: "reward >= 1",
      out: join(dir, "out"),
      workDir: dir,
      runRollouts: async () => {
        ({ pngs } = await writeImageSession(new DirectoryStore(join(dir, "store"))));
        return { storeDir: join(dir, "store") };
      },
      progressOut: { write: () => true } as unknown as NodeJS.WritableStream,
    });
    expect(stats.chat_unavailable).toEqual([]);
    expect(stats.chat_records).toBe(1);
    const text = readFileSync(join(dir, "out", "chat.jsonl"), "utf8");
    const urls = [...text.matchAll(/"url":"([^"]+)"/g)].map((m) => m[1]);
    expect(urls).toEqual(pngs.map((p) => `data:image/png;base64,${bytesToBase64(p)}`));
    expect(text).not.toContain("polar-image:");
  });
});
