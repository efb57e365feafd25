import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { keys } from "../../shared/keys.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { startFakeUpstream } from "../support/fake-upstream.ts";
import { pngDeclaring, screenshotPng } from "../support/png.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { type RecordingUpstream, startRecordingUpstream } from "../support/recording-upstream.ts";

/**
 * Issue 49, items 3 and 4: the proxy answered 200 to a 304 KB PNG declaring 50000x50000 pixels,
 * to one call with 300 copies of a 13000x13000 PNG, and to one 1.7 MB call of 20,000 distinct
 * 12-byte "PNGs" (signature plus a counter), which left 20,000 objects under `blobs/sha256/`;
 * a call the engine refused stored its images too, and nothing bounded what one session adds.
 * Each is now refused before any engine or store sees it (400 in the caller's shape, naming the
 * limit), or, for the engine's refusal, keeps only its record.
 */
const KEY = "image-bombs-signing-key";
const TASK = "bombs";
const SIG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const dataUrl = (b: Uint8Array) => `data:image/png;base64,${bytesToBase64(b)}`;

let upstream: RecordingUpstream;
let proxy: TestProxy;
const started: { close(): Promise<void> }[] = [];
let seq = 0;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  proxy = await startProxy({
    upstream: upstream.url,
    signingKey: KEY,
    streamMode: "synthesize",
    log: () => {},
  });
  started.push(upstream, proxy);
});
afterAll(async () => {
  for (const s of started.reverse()) await s.close();
});

async function token(): Promise<{ id: string; token: string }> {
  const id = `bomb${++seq}`;
  return { id, token: await mintSessionToken({ sessionId: id, taskId: TASK }, KEY) };
}

function openaiCall(p: TestProxy, tok: string, urls: string[]) {
  const content = [
    { type: "text", text: "what is on screen?" },
    ...urls.map((url) => ({ type: "image_url", image_url: { url } })),
  ];
  return fetch(`${p.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${tok}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content }] }),
  });
}

function anthropicCall(p: TestProxy, tok: string, pngs: Uint8Array[]) {
  const content = pngs.map((b) => ({
    type: "image",
    source: { type: "base64", media_type: "image/png", data: bytesToBase64(b) },
  }));
  return fetch(`${p.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": tok, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content }] }),
  });
}

async function expectRefused(res: Response, says: string, shape: "openai" | "anthropic"): Promise<void> {
  expect(res.status).toBe(400);
  const body = await res.json();
  if (shape === "openai") {
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain(says);
  } else {
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain(says);
  }
}

/** Nothing of the session's calls reached the engine or the store. */
async function expectNothingKept(p: TestProxy, session: string, enginesBefore: number): Promise<void> {
  expect(upstream.bodies.length).toBe(enginesBefore);
  expect(await readCaptures(p.store, TASK, session)).toEqual([]);
  expect(await p.store.list("blobs/")).toEqual([]);
}

describe("images are bounded before the engine or the store sees them", () => {
  it("a well-formed PNG declaring 50000x50000 pixels: 400 naming --max-image-pixels (OpenAI and Anthropic shapes)", async () => {
    const s = await token();
    const before = upstream.bodies.length;
    const bomb = pngDeclaring(50_000, 50_000);
    await expectRefused(await openaiCall(proxy, s.token, [dataUrl(bomb)]), "50000x50000 pixels", "openai");
    await expectRefused(await anthropicCall(proxy, s.token, [bomb]), "--max-image-pixels", "anthropic");
    await expectNothingKept(proxy, s.id, before);
  });

  it("a token count (the engine's /tokenize opens images too) is bounded the same way", async () => {
    const s = await token();
    const content = [
      {
        type: "image",
        source: {
          type: "base64",
          media_type: "image/png",
          data: bytesToBase64(pngDeclaring(50_000, 50_000)),
        },
      },
    ];
    const res = await fetch(`${proxy.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: {
        "x-api-key": s.token,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content }] }),
    });
    await expectRefused(res, "--max-image-pixels", "anthropic");
  });

  it("300 copies of a 13000x13000 PNG: refused by the image count before any is decoded; one copy by its pixels", async () => {
    const s = await token();
    const before = upstream.bodies.length;
    const url = dataUrl(pngDeclaring(13_000, 13_000));
    await expectRefused(
      await openaiCall(proxy, s.token, Array(300).fill(url)),
      "300 images, over this proxy's cap of 100 images per call (--max-images-per-call)",
      "openai",
    );
    await expectRefused(await openaiCall(proxy, s.token, [url]), "13000x13000 pixels", "openai");
    await expectNothingKept(proxy, s.id, before);
  });

  it("20,000 distinct 12-byte PNGs in one 1.7 MB call: refused, no blob written, even with the count cap lifted", async () => {
    const lifted = await startProxy({
      upstream: upstream.url,
      signingKey: KEY,
      streamMode: "synthesize",
      log: () => {},
      limits: { maxImagesPerCall: 100_000 },
    });
    started.push(lifted);
    const fakes = Array.from({ length: 20_000 }, (_, i) =>
      dataUrl(new Uint8Array([...SIG, i >>> 24, (i >>> 16) & 0xff, (i >>> 8) & 0xff, i & 0xff])),
    );
    for (const [p, says] of [
      [proxy, "20000 images, over this proxy's cap of 100"],
      [lifted, "not a decodable image (image/png it ends before its IEND chunk)"],
    ] as const) {
      const s = await token();
      const before = upstream.bodies.length;
      await expectRefused(await openaiCall(p, s.token, fakes), says, "openai");
      await expectNothingKept(p, s.id, before);
    }
  });

  it("one session adds at most --max-session-images new image objects; re-sent ones are not charged again", async () => {
    const tight = await startProxy({
      upstream: upstream.url,
      signingKey: KEY,
      streamMode: "synthesize",
      log: () => {},
      limits: { maxSessionImages: 3 },
    });
    started.push(tight);
    const s = await token();
    const shots = [1, 2, 3, 4].map((i) => dataUrl(screenshotPng(100 + i)));
    for (let turn = 0; turn < 3; turn++) {
      const res = await openaiCall(tight, s.token, shots.slice(0, turn + 1));
      expect(res.status).toBe(200);
    }
    const before = upstream.bodies.length;
    await expectRefused(
      await openaiCall(tight, s.token, shots),
      "would store 4 images, over this proxy's cap of 3 images per session (--max-session-images)",
      "openai",
    );
    expect(upstream.bodies.length).toBe(before);
    expect(await readCaptures(tight.store, TASK, s.id)).toHaveLength(3);
    expect(await tight.store.list("blobs/sha256/")).toHaveLength(3);
    // The three it stored are still free to send: a computer-use agent re-sends its last screenshots.
    expect((await openaiCall(tight, s.token, shots.slice(0, 3))).status).toBe(200);
    // Another session has its own budget.
    const other = await token();
    expect((await openaiCall(tight, other.token, [shots[3]])).status).toBe(200);
    expect(await tight.store.list("blobs/sha256/")).toHaveLength(4);
  });

  it("the session's bytes are bounded too (--max-session-image-mb)", async () => {
    const one = screenshotPng(200, 64, 48).byteLength;
    const tight = await startProxy({
      upstream: upstream.url,
      signingKey: KEY,
      streamMode: "synthesize",
      log: () => {},
      limits: { maxSessionImageBytes: Math.floor(one * 1.5) },
    });
    started.push(tight);
    const s = await token();
    expect((await openaiCall(tight, s.token, [dataUrl(screenshotPng(200, 64, 48))])).status).toBe(200);
    await expectRefused(
      await openaiCall(tight, s.token, [dataUrl(screenshotPng(201, 64, 48))]),
      "per session (--max-session-image-mb)",
      "openai",
    );
    expect(await tight.store.list("blobs/sha256/")).toHaveLength(1);
    expect(await tight.store.list(keys.imageBudget(TASK, s.id, 0))).toHaveLength(1);
  });

  it("a call the engine refused keeps its record, not its images", async () => {
    const refusing = await startFakeUpstream((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          object: "error",
          message: "cannot identify image file",
          type: "BadRequestError",
          code: 400,
        }),
      );
    });
    const p = await startProxy({
      upstream: refusing.url,
      signingKey: KEY,
      streamMode: "synthesize",
      log: () => {},
      captureRetry: { baseDelayMs: 1 },
    });
    started.push(refusing, p);
    const s = await token();
    const res = await openaiCall(p, s.token, [dataUrl(screenshotPng(300))]);
    expect(res.status).toBe(400);
    const caps = await readCaptures(p.store, TASK, s.id);
    expect(caps).toHaveLength(1);
    expect(caps[0].error?.status).toBe(400);
    expect(caps[0].image_refs).toBeUndefined();
    expect(JSON.stringify(caps[0])).not.toContain(bytesToBase64(screenshotPng(300)).slice(0, 100));
    expect(await p.store.list("blobs/")).toEqual([]);
  });
});
