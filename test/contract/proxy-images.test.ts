import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesToBase64 } from "../../shared/encoding/base64.ts";
import { engineImages, restoreImages, sha256Hex } from "../../shared/images/image-refs.ts";
import { keys } from "../../shared/keys.ts";
import { mintSessionToken } from "../../shared/session-token.ts";
import { S3Store } from "../../shared/store/s3-store.ts";
import { screenshotPng } from "../support/png.ts";
import { startPolicy } from "../support/policy.ts";
import { readCaptures, startProxy, type TestProxy } from "../support/proxy.ts";
import { type RecordingUpstream, startRecordingUpstream } from "../support/recording-upstream.ts";
import { type RunningS3rver, startS3rver } from "../support/s3rver.ts";

/**
 * Images through the proxy with the official SDKs as clients: every provider's image parts reach
 * the engine as Chat Completions image_url parts in order (detail hints kept), each image is
 * stored once at `blobs/sha256/{hash}`, and the capture gives the request back exactly.
 */
const KEY = "images-signing-key";
const TASK = "images-task";
const PNG_A = screenshotPng(1);
const PNG_B = screenshotPng(2);
const PNG_C = screenshotPng(3);
const b64 = (b: Uint8Array) => bytesToBase64(b);
const dataUrl = (b: Uint8Array) => `data:image/png;base64,${b64(b)}`;
const REMOTE = "http://127.0.0.1:9/screen.png";

let upstream: RecordingUpstream;
let proxy: TestProxy;
let remoteProxy: TestProxy;
let seq = 0;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  const common = { upstream: upstream.url, signingKey: KEY, streamMode: "synthesize" as const };
  proxy = await startProxy(common);
  remoteProxy = await startProxy({ ...common, allowRemoteImages: true });
});
afterAll(async () => {
  await proxy?.close();
  await remoteProxy?.close();
  await upstream?.close();
});

async function session(): Promise<{ id: string; token: string }> {
  const id = `img${++seq}`;
  return { id, token: await mintSessionToken({ sessionId: id, taskId: TASK }, KEY) };
}

/** The image parts of the last chat body the engine got, as [url, detail]. */
function lastImages(): [string, string | undefined][] {
  const body = upstream.bodies.at(-1) as { messages: { content: unknown }[] };
  const out: [string, string | undefined][] = [];
  for (const m of body.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content as { type: string; image_url?: { url: string; detail?: string } }[])
      if (p.type === "image_url" && p.image_url) out.push([p.image_url.url, p.image_url.detail]);
  }
  return out;
}

async function blobKeys(p: TestProxy): Promise<string[]> {
  return p.store.list("blobs/sha256/");
}

const anthropic = (p: TestProxy, token: string) =>
  new Anthropic({ apiKey: token, baseURL: p.url, maxRetries: 0 });
const openai = (p: TestProxy, token: string) =>
  new OpenAI({ apiKey: token, baseURL: `${p.url}/v1`, maxRetries: 0 });
const google = (p: TestProxy, token: string) =>
  new GoogleGenAI({ apiKey: token, httpOptions: { baseUrl: p.url } });

describe("image parts reach the engine in order", () => {
  it("Anthropic base64 blocks (in a tool result and a turn), streamed and not; each image stored once", async () => {
    const s = await session();
    const c = anthropic(proxy, s.token);
    const img = (b: Uint8Array) => ({
      type: "image" as const,
      source: { type: "base64" as const, media_type: "image/png" as const, data: b64(b) },
    });
    const messages: Anthropic.MessageParam[] = [
      { role: "user", content: [{ type: "text", text: "what is on screen?" }, img(PNG_A)] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "screenshot", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [img(PNG_B)] }, img(PNG_C)],
      },
    ];
    const tools = [
      { name: "screenshot", description: "take one", input_schema: { type: "object" as const } },
    ];
    const answer = await c.messages.create({ model: "m", max_tokens: 8, messages, tools });
    expect(answer.content).toEqual([{ type: "text", text: "ok" }]);
    expect(lastImages().map(([u]) => u)).toEqual([dataUrl(PNG_A), dataUrl(PNG_B), dataUrl(PNG_C)]);
    const text = await c.messages.stream({ model: "m", max_tokens: 8, messages, tools }).finalText();
    expect(text).toBe("ok");

    const caps = await readCaptures(proxy.store, TASK, s.id);
    expect(caps).toHaveLength(2);
    const hashes = [await sha256Hex(PNG_A), await sha256Hex(PNG_B), await sha256Hex(PNG_C)];
    for (const cap of caps) {
      expect(engineImages(cap).map((r) => r.sha256)).toEqual(hashes);
      // No image text is left in the stored record: the placeholders stand in for it.
      expect(JSON.stringify(cap)).not.toContain(b64(PNG_A).slice(0, 200));
      const restored = await restoreImages(cap, async (h) => proxy.store.get(keys.imageBlob(h)));
      expect(restored.request).toEqual({ ...(restored.request as object), messages });
      expect(lastImages().map(([u]) => u)).toEqual(
        engineImagesUrls(restored.chat_request as { messages: { content: unknown }[] }),
      );
    }
    for (const h of hashes) {
      expect(await proxy.store.get(keys.imageBlob(h))).toEqual([PNG_A, PNG_B, PNG_C][hashes.indexOf(h)]);
    }
  });

  it("Anthropic url images are refused by default and passed on when the operator allows them", async () => {
    const s = await session();
    const before = upstream.bodies.length;
    const messages: Anthropic.MessageParam[] = [
      { role: "user", content: [{ type: "image", source: { type: "url", url: REMOTE } }] },
    ];
    const err = await anthropic(proxy, s.token)
      .messages.create({ model: "m", max_tokens: 8, messages })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(err.error.error.message).toContain("--allow-remote-images");
    expect(upstream.bodies.length).toBe(before);
    expect(await readCaptures(proxy.store, TASK, s.id)).toEqual([]);

    await anthropic(remoteProxy, s.token).messages.create({ model: "m", max_tokens: 8, messages });
    expect(lastImages()).toEqual([[REMOTE, undefined]]);
  });

  it("OpenAI Chat data: and http URLs with detail, streamed and not", async () => {
    const s = await session();
    const c = openai(remoteProxy, s.token);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: dataUrl(PNG_B), detail: "low" } },
          { type: "text", text: "and this one" },
          { type: "image_url", image_url: { url: REMOTE, detail: "high" } },
          { type: "image_url", image_url: { url: dataUrl(PNG_A) } },
        ],
      },
    ];
    const r = await c.chat.completions.create({ model: "m", messages });
    expect(r.choices[0].message.content).toBe("ok");
    expect(lastImages()).toEqual([
      [dataUrl(PNG_B), "low"],
      [REMOTE, "high"],
      [dataUrl(PNG_A), undefined],
    ]);
    let streamed = "";
    for await (const chunk of await c.chat.completions.create({ model: "m", messages, stream: true }))
      streamed += chunk.choices[0]?.delta?.content ?? "";
    expect(streamed).toBe("ok");
    const [cap] = await readCaptures(remoteProxy.store, TASK, s.id);
    // The remote URL is not an image the proxy holds: only the two inline ones are referenced.
    expect(engineImages(cap).map((r) => r.sha256)).toEqual([await sha256Hex(PNG_B), await sha256Hex(PNG_A)]);
    const restored = await restoreImages(cap, async (h) => remoteProxy.store.get(keys.imageBlob(h)));
    expect((restored.request as { messages: unknown }).messages).toEqual(messages);
  });

  it("a supported image under another supported label (image/jpg, a PNG sent as image/jpeg) passes as sent", async () => {
    const s = await session();
    const labels = [`data:image/jpg;base64,${b64(PNG_A)}`, `data:image/jpeg;base64,${b64(PNG_B)}`];
    await openai(proxy, s.token).chat.completions.create({
      model: "m",
      messages: [
        { role: "user", content: labels.map((url) => ({ type: "image_url" as const, image_url: { url } })) },
      ],
    });
    expect(lastImages().map(([u]) => u)).toEqual(labels);
    const [cap] = await readCaptures(proxy.store, TASK, s.id);
    expect(engineImages(cap).map((r) => r.media_type)).toEqual(["image/jpg", "image/jpeg"]);
    const restored = await restoreImages(cap, async (h) => proxy.store.get(keys.imageBlob(h)));
    expect(JSON.stringify(restored.chat_request)).toContain(labels[1]);
  });

  it("OpenAI Responses input_image with detail, streamed and not", async () => {
    const s = await session();
    const input: OpenAI.Responses.ResponseInput = [
      {
        role: "user",
        content: [
          { type: "input_text", text: "look" },
          { type: "input_image", image_url: dataUrl(PNG_C), detail: "high" },
          { type: "input_image", image_url: dataUrl(PNG_A), detail: "auto" },
        ],
      },
    ];
    const c = openai(proxy, s.token);
    const r = await c.responses.create({ model: "m", input });
    expect(r.output_text).toBe("ok");
    expect(lastImages()).toEqual([
      [dataUrl(PNG_C), "high"],
      [dataUrl(PNG_A), "auto"],
    ]);
    let streamed = "";
    for await (const event of await c.responses.create({ model: "m", input, stream: true }))
      if (event.type === "response.output_text.delta") streamed += event.delta;
    expect(streamed).toBe("ok");
    expect(upstream.bodies.at(-1)).toEqual(upstream.bodies.at(-2));
  });

  it("Google inline_data and file_data, streamed and not", async () => {
    const s = await session();
    const contents = [
      {
        role: "user",
        parts: [
          { text: "screen:" },
          { inlineData: { mimeType: "image/png", data: b64(PNG_A) } },
          { fileData: { mimeType: "image/png", fileUri: REMOTE } },
          { inlineData: { mimeType: "image/png", data: b64(PNG_B) } },
        ],
      },
    ];
    const c = google(remoteProxy, s.token);
    const r = await c.models.generateContent({ model: "m", contents });
    expect(r.text).toBe("ok");
    expect(lastImages().map(([u]) => u)).toEqual([dataUrl(PNG_A), REMOTE, dataUrl(PNG_B)]);
    let streamed = "";
    for await (const chunk of await c.models.generateContentStream({ model: "m", contents }))
      streamed += chunk.text ?? "";
    expect(streamed).toBe("ok");
    const caps = await readCaptures(remoteProxy.store, TASK, s.id);
    const restored = await restoreImages(caps[0], async (h) => remoteProxy.store.get(keys.imageBlob(h)));
    expect((restored.request as { contents: unknown }).contents).toEqual(contents);
  });
});

for (const backend of ["memory", "s3rver"] as const) {
  describe(`a session re-sending its screenshots stores each once (${backend})`, () => {
    let p: TestProxy;
    let s3: RunningS3rver | undefined;
    beforeAll(async () => {
      if (backend === "s3rver") s3 = await startS3rver();
      const store = s3 ? new S3Store({ bucket: s3.bucket, prefix: "polar", client: s3.client }) : undefined;
      p = await startProxy({ upstream: upstream.url, signingKey: KEY, streamMode: "synthesize", store });
    });
    afterAll(async () => {
      await p?.close();
      await s3?.stop();
    });

    it("captured bytes per call stay flat while the blobs hold each distinct image once", async () => {
      const s = await session();
      const c = openai(p, s.token);
      const shots = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => screenshotPng(100 + i, 96, 72));
      const sizes: number[] = [];
      for (let turn = 0; turn < shots.length; turn++) {
        // Each call re-sends the last three screenshots.
        const recent = shots.slice(Math.max(0, turn - 2), turn + 1);
        await c.chat.completions.create({
          model: "m",
          messages: [
            {
              role: "user",
              content: recent.map((b) => ({ type: "image_url" as const, image_url: { url: dataUrl(b) } })),
            },
          ],
        });
        const list = await p.store.list(keys.capturesOfSession(TASK, s.id));
        sizes.push(((await p.store.get(list.at(-1) as string)) as Uint8Array).byteLength);
      }
      const blobs = await blobKeys(p);
      expect(blobs.sort()).toEqual(
        (await Promise.all(shots.map(async (b) => keys.imageBlob(await sha256Hex(b))))).sort(),
      );
      for (const b of shots) expect(await p.store.get(keys.imageBlob(await sha256Hex(b)))).toEqual(b);
      // A screenshot is ~20 KB: a capture holding one inline would be far larger than these.
      expect(Math.max(...sizes)).toBeLessThan(2000);
    });
  });
}

describe("a live stream (the engine's own chunks) keeps its images once too", () => {
  it("the dry-run policy streams; the capture references the image, stored once", async () => {
    const policy = await startPolicy();
    const live = await startProxy({ upstream: policy.url, signingKey: KEY, streamMode: "live" });
    try {
      const s = await session();
      const stream = await openai(live, s.token).chat.completions.create({
        model: "policy",
        stream: true,
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "what is on screen?" },
              { type: "image_url", image_url: { url: dataUrl(PNG_C) } },
              { type: "image_url", image_url: { url: dataUrl(PNG_C) } },
            ],
          },
        ],
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      expect(text.length).toBeGreaterThan(0);
      const [cap] = await readCaptures(live.store, TASK, s.id);
      expect(cap.stream_status).toBe("complete");
      expect(engineImages(cap).map((r) => r.sha256)).toEqual([
        await sha256Hex(PNG_C),
        await sha256Hex(PNG_C),
      ]);
      expect(await blobKeys(live)).toEqual([keys.imageBlob(await sha256Hex(PNG_C))]);
    } finally {
      await live.close();
      await policy.close();
    }
  });
});

describe("bad images are refused in the caller's shape, nothing captured", () => {
  let tight: TestProxy;
  beforeAll(async () => {
    tight = await startProxy({
      upstream: upstream.url,
      signingKey: KEY,
      streamMode: "synthesize",
      limits: { maxImageBytes: 1000 },
    });
  });
  afterAll(async () => {
    await tight?.close();
  });

  const CASES: [string, string, string][] = [
    ["over the cap", dataUrl(PNG_A), "image size cap of 0.00 MiB (1000 bytes"],
    ["undecodable base64", "data:image/png;base64,iVBOR!!w0KGgo", "does not decode as base64"],
    [
      "bytes that are no image",
      `data:image/png;base64,${b64(new TextEncoder().encode("hello world!"))}`,
      "not a decodable image",
    ],
    [
      "an unsupported media type",
      `data:image/bmp;base64,${b64(new Uint8Array([0x42, 0x4d, 1, 2]))}`,
      '"image/bmp" is not supported',
    ],
    ["a remote URL while fetching is off", REMOTE, "--allow-remote-images"],
    ["a file: URL", "file:///etc/passwd", "scheme"],
  ];

  for (const [what, url, says] of CASES) {
    it(`${what}: 400 for each provider`, async () => {
      const s = await session();
      const before = upstream.bodies.length;
      const blobsBefore = await blobKeys(tight);
      const data = url.startsWith("data:") ? url.slice(url.indexOf(",") + 1) : "";
      const media = url.startsWith("data:") ? url.slice(5, url.indexOf(";")) : "image/png";

      const a = await anthropic(tight, s.token)
        .messages.create({
          model: "m",
          max_tokens: 8,
          messages: [
            {
              role: "user",
              content: [
                url.startsWith("data:")
                  ? // biome-ignore lint/suspicious/noExplicitAny: a media type the SDK's type does not list
                    { type: "image", source: { type: "base64", media_type: media as any, data } }
                  : { type: "image", source: { type: "url", url } },
              ],
            },
          ],
        })
        .catch((e) => e);
      expect(a).toBeInstanceOf(Anthropic.BadRequestError);
      expect(a.error.error.type).toBe("invalid_request_error");
      expect(a.error.error.message).toContain(says);

      const o = await openai(tight, s.token)
        .chat.completions.create({
          model: "m",
          messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }],
        })
        .catch((e) => e);
      expect(o).toBeInstanceOf(OpenAI.BadRequestError);
      expect(o.error.type).toBe("invalid_request_error");
      expect(o.error.message).toContain(says);

      const r = await openai(tight, s.token)
        .responses.create({
          model: "m",
          input: [{ role: "user", content: [{ type: "input_image", image_url: url, detail: "auto" }] }],
        })
        .catch((e) => e);
      expect(r).toBeInstanceOf(OpenAI.BadRequestError);
      expect(r.error.message).toContain(says);

      const part = url.startsWith("data:")
        ? { inlineData: { mimeType: media, data } }
        : { fileData: { mimeType: "image/png", fileUri: url } };
      const g = await google(tight, s.token)
        .models.generateContent({ model: "m", contents: [{ role: "user", parts: [part] }] })
        .catch((e) => e);
      expect(g).toBeInstanceOf(Error);
      const status = JSON.parse(g.message.slice(g.message.indexOf("{")));
      expect(status.error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
      expect(status.error.message).toContain(says);

      expect(upstream.bodies.length).toBe(before);
      expect(await readCaptures(tight.store, TASK, s.id)).toEqual([]);
      expect(await blobKeys(tight)).toEqual(blobsBefore);
    });
  }
});

function engineImagesUrls(chat: { messages: { content: unknown }[] }): string[] {
  const out: string[] = [];
  for (const m of chat.messages)
    if (Array.isArray(m.content))
      for (const p of m.content as { type: string; image_url?: { url: string } }[])
        if (p.type === "image_url" && p.image_url) out.push(p.image_url.url);
  return out;
}
