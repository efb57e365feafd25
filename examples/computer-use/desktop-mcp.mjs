#!/usr/bin/env node
/*
 * A virtual desktop with computer-use tools over MCP (stdio, newline-delimited JSON-RPC 2.0), no
 * dependencies, for a harness to start from its own MCP config (`agent.mcp_servers`,
 * docs/computer-use.md "A desktop over MCP"). The tools are the Anthropic computer-use demo's
 * actions as separate tools: `screenshot` (an MCP image block, PNG), `left_click {x, y}`,
 * `mouse_move {x, y}`, `type {text}`, `key {keys}`.
 *
 *   node desktop-mcp.mjs [--screen 1024x768x24] [--app "shell command"]
 *
 * With $DISPLAY unset it starts Debian's Xvfb on the first free display (no TCP listener; the
 * socket in this sandbox's /tmp) and reads screenshots from Xvfb's own framebuffer file (-fbdir, an
 * XWD image Xvfb keeps current), so no screenshot program is needed. With $DISPLAY set it uses that
 * display and captures it with `xwd -root` (Debian's x11-apps). Input goes through `xdotool`. No
 * window manager: with none, X gives the keyboard to the window under the pointer, so a click on a
 * field is enough to type into it. `--app` is started (sh -c, in the working dir) once the display
 * is up, with DISPLAY set; it and Xvfb stop when the harness closes the server's stdin.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { deflateSync } from "node:zlib";

const flags = process.argv.slice(2);
function flag(name) {
  const at = flags.indexOf(name);
  return at >= 0 ? flags[at + 1] : undefined;
}

const SCREEN = flag("--screen") ?? "1024x768x24";
const [WIDTH, HEIGHT] = SCREEN.split("x").map(Number);
if (!/^\d+x\d+x(24|32)$/.test(SCREEN) || !(WIDTH > 0 && HEIGHT > 0 && WIDTH <= 4096 && HEIGHT <= 4096)) {
  process.stderr.write(`--screen WxHxD with depth 24 or 32, not ${SCREEN}\n`);
  process.exit(2);
}
const APP = flag("--app");
/** What `type` takes at once: more is a mistake, and xdotool types ~80 characters a second. */
const MAX_TEXT = 2000;

// ---------------------------------------------------------------- the display

/** How to stop what this server started (Xvfb, the app's process group), run when it ends. */
const stops = [];
let fbdir = null;

function startXvfb() {
  fbdir = mkdtempSync(join(tmpdir(), "polar-desktop-"));
  return new Promise((resolve, reject) => {
    // -displayfd: Xvfb takes the first free display number and writes it on fd 3.
    const xvfb = spawn(
      "Xvfb",
      ["-displayfd", "3", "-screen", "0", SCREEN, "-nolisten", "tcp", "-fbdir", fbdir],
      { stdio: ["ignore", "ignore", "pipe", "pipe"] },
    );
    stops.push(() => xvfb.kill("SIGTERM"));
    let number = "";
    let log = "";
    xvfb.stderr.on("data", (chunk) => {
      log = (log + chunk).slice(-2000);
    });
    xvfb.on("error", (error) => reject(new Error(`Xvfb did not start: ${error.message}`)));
    xvfb.on("exit", (code) => reject(new Error(`Xvfb exited ${code}: ${log.trim()}`)));
    xvfb.stdio[3].on("data", (chunk) => {
      number += chunk;
      if (number.includes("\n")) resolve(`:${number.trim()}`);
    });
  });
}

function run(file, args, env = process.env) {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env, encoding: "buffer", maxBuffer: 256 << 20, timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${file} ${args[0] ?? ""}: ${String(stderr || error.message).trim()}`));
        else resolve(stdout);
      },
    );
  });
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** The display, once it is up and the app (if any) has shown a window. */
const ready = (async () => {
  const own = !process.env.DISPLAY;
  const display = own ? await startXvfb() : process.env.DISPLAY;
  const env = { ...process.env, DISPLAY: display };
  // A display of someone else's has its own size (--screen sizes ours).
  const [width, height] = own
    ? [WIDTH, HEIGHT]
    : String(await run("xdotool", ["getdisplaygeometry"], env))
        .trim()
        .split(/\s+/)
        .map(Number);
  if (APP) {
    // Its own process group: `sh -c` forks the app, and stopping the shell alone would leave the app
    // running (on a $DISPLAY that outlives this server).
    const app = spawn("sh", ["-c", APP], { env, stdio: ["ignore", "ignore", "inherit"], detached: true });
    stops.push(() => {
      try {
        process.kill(-app.pid, "SIGTERM");
      } catch {
        // The group is gone already.
      }
    });
    // Until the app maps a window (a screenshot before would show an empty screen).
    for (let i = 0; i < 100; i++) {
      const found = await run("xdotool", ["search", "--onlyvisible", "--class", "."], env).catch(() => null);
      if (found?.length) break;
      if (app.exitCode !== null) throw new Error(`--app exited ${app.exitCode} before showing a window`);
      await sleep(150);
    }
  }
  return { display, env, own, width, height };
})();
// A failed start is reported by each tool call, not as an unhandled rejection.
ready.catch(() => {});

function stop() {
  for (const stopOne of stops.reverse()) stopOne();
  if (fbdir) rmSync(fbdir, { recursive: true, force: true });
}
process.on("SIGTERM", () => {
  stop();
  process.exit(0);
});

// ---------------------------------------------------------------- screenshots: XWD -> PNG

/**
 * An XWD image (X11/XWDFile.h: a 100-byte header of 25 CARD32s, the window name, the colormap,
 * then the pixels) as { width, height, rgb }. ZPixmap, TrueColor, 24 or 32 bits per pixel only,
 * which is what Xvfb and `xwd` give for a 24-bit screen.
 */
export function decodeXwd(bytes) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Xvfb writes the header in the host's byte order, xwd in big-endian: file_version (7) tells.
  const big = buf.readUInt32BE(4) === 7;
  const field = (i) => (big ? buf.readUInt32BE(i * 4) : buf.readUInt32LE(i * 4));
  const [headerSize, version, format, , width, height] = [0, 1, 2, 3, 4, 5].map(field);
  const byteOrder = field(7);
  const bitsPerPixel = field(11);
  const bytesPerLine = field(12);
  const [redMask, greenMask, blueMask] = [14, 15, 16].map(field);
  const ncolors = field(19);
  if (version !== 7 || format !== 2 || (bitsPerPixel !== 32 && bitsPerPixel !== 24)) {
    throw new Error(`unsupported XWD image (version ${version}, format ${format}, ${bitsPerPixel} bpp)`);
  }
  const start = headerSize + ncolors * 12;
  if (buf.length < start + bytesPerLine * height) throw new Error("XWD image shorter than its header says");
  const shift = (mask) => (mask ? 31 - Math.clz32(mask & -mask) : 0);
  const [rs, gs, bs] = [redMask, greenMask, blueMask].map(shift);
  const rgb = Buffer.alloc(width * height * 3);
  const step = bitsPerPixel / 8;
  for (let y = 0; y < height; y++) {
    const row = start + y * bytesPerLine;
    for (let x = 0; x < width; x++) {
      const at = row + x * step;
      // byte_order 0: least significant byte first.
      const pixel =
        step === 4
          ? byteOrder === 0
            ? buf.readUInt32LE(at)
            : buf.readUInt32BE(at)
          : byteOrder === 0
            ? buf.readUIntLE(at, 3)
            : buf.readUIntBE(at, 3);
      const out = (y * width + x) * 3;
      rgb[out] = (pixel & redMask) >>> rs;
      rgb[out + 1] = (pixel & greenMask) >>> gs;
      rgb[out + 2] = (pixel & blueMask) >>> bs;
    }
  }
  return { width, height, rgb };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** An 8-bit RGB PNG (each row filter 0) of { width, height, rgb }. */
export function encodePng({ width, height, rgb }) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

async function screenshot() {
  const { env, own } = await ready;
  const xwd = own ? readFileSync(join(fbdir, "Xvfb_screen0")) : await run("xwd", ["-root", "-silent"], env);
  const png = encodePng(decodeXwd(xwd));
  return { content: [{ type: "image", data: png.toString("base64"), mimeType: "image/png" }] };
}

// ---------------------------------------------------------------- input

async function point(args) {
  const { width, height } = await ready;
  const { x, y } = args ?? {};
  if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= width || y >= height) {
    throw new Error(`x and y are whole pixels on the ${width}x${height} screen`);
  }
  return [String(x), String(y)];
}

async function xdotool(args) {
  const { env } = await ready;
  await run("xdotool", args, env);
}

const TOOLS = {
  screenshot: {
    description:
      "Take a screenshot of the desktop, as a PNG image (its pixels are the coordinates of the other tools).",
    properties: {},
    required: [],
    call: screenshot,
  },
  left_click: {
    description: "Move the mouse to (x, y) in screen pixels and click the left button.",
    properties: { x: { type: "integer" }, y: { type: "integer" } },
    required: ["x", "y"],
    async call(args) {
      const [x, y] = await point(args);
      await xdotool(["mousemove", "--sync", x, y, "click", "1"]);
      return `clicked at (${x}, ${y})`;
    },
  },
  mouse_move: {
    description: "Move the mouse to (x, y) in screen pixels.",
    properties: { x: { type: "integer" }, y: { type: "integer" } },
    required: ["x", "y"],
    async call(args) {
      const [x, y] = await point(args);
      await xdotool(["mousemove", "--sync", x, y]);
      return `moved to (${x}, ${y})`;
    },
  },
  type: {
    description: "Type text with the keyboard, into the window under the mouse (click a field first).",
    properties: { text: { type: "string" } },
    required: ["text"],
    async call(args) {
      const text = args?.text;
      if (typeof text !== "string" || !text || text.length > MAX_TEXT)
        throw new Error(`text: 1 to ${MAX_TEXT} characters`);
      // "--": a text starting with "-" is typed, not read as an option.
      await xdotool(["type", "--delay", "20", "--", text]);
      return `typed ${text.length} characters`;
    },
  },
  key: {
    description:
      'Press a key or a combination, xdotool names, space-separated: "Return", "ctrl+a BackSpace".',
    properties: { keys: { type: "string" } },
    required: ["keys"],
    async call(args) {
      const keys = typeof args?.keys === "string" ? args.keys.trim().split(/\s+/) : [];
      // Key names only (letters, digits, _ and + between them): nothing xdotool would read as an option.
      if (!keys.length || keys.length > 20 || !keys.every((k) => /^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$/.test(k)))
        throw new Error('keys: xdotool key names, e.g. "Return" or "ctrl+a"');
      await xdotool(["key", "--", ...keys]);
      return `pressed ${keys.join(" ")}`;
    },
  },
};

function listTools() {
  return Object.entries(TOOLS).map(([name, t]) => ({
    name,
    description: t.description,
    inputSchema: { type: "object", properties: t.properties, required: t.required },
  }));
}

async function callTool(params) {
  const tool = Object.hasOwn(TOOLS, params?.name ?? "") ? TOOLS[params.name] : null;
  if (!tool) return { error: { code: -32602, message: `unknown tool: ${params?.name}` } };
  try {
    const out = await tool.call(params.arguments ?? {});
    return typeof out === "string" ? { content: [{ type: "text", text: out }] } : out;
  } catch (error) {
    // A tool's failure is the model's to read (MCP tool errors), not a protocol error.
    return { isError: true, content: [{ type: "text", text: error.message }] };
  }
}

async function answer(request) {
  switch (request.method) {
    case "initialize":
      return {
        protocolVersion: request.params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "polar-desktop", version: "1.0.0" },
      };
    case "ping":
      return {};
    case "tools/list":
      return { tools: listTools() };
    case "tools/call":
      return callTool(request.params);
    default:
      return { error: { code: -32601, message: `method not found: ${request.method}` } };
  }
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } };
  }
  if (request?.id === undefined || request.id === null) return null;
  const result = await answer(request);
  return result.error
    ? { jsonrpc: "2.0", id: request.id, error: result.error }
    : { jsonrpc: "2.0", id: request.id, result };
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  handle(line).then((reply) => {
    if (reply) process.stdout.write(`${JSON.stringify(reply)}\n`);
  });
});
lines.on("close", () => {
  stop();
  process.exit(0);
});
