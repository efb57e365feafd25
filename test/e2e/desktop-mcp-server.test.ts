import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { inflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { desktopMissing } from "../support/sandbox-lanes.ts";

/*
 * The desktop MCP server (examples/computer-use/desktop-mcp.mjs) on its own, over stdio, on this
 * host: the real Xvfb, xdotool, xwd and the Tk code app. Screenshots are read back pixel by pixel
 * (the app's white window, its blue code, the black screen: channels in the right order), input
 * reaches the app, bad arguments are tool errors and the server goes on, and closing stdin stops
 * Xvfb and the app. The sandboxed runs through Claude Code and Gemini CLI: desktop-mcp-harnesses.test.ts.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SERVER = join(ROOT, "examples", "computer-use", "desktop-mcp.mjs");
const APP = `/usr/bin/python3 ${join(ROOT, "examples", "computer-use", "desktop-app", "code_app.py")}`;

const skipReason = desktopMissing();
if (skipReason) console.log(`desktop MCP server test skipped: ${skipReason}`);
const HAVE_XWD = spawnSync("xwd", ["-help"]).error === undefined;

interface Reply {
  id: number | null;
  result?: {
    content?: { type: string; text?: string; data?: string; mimeType?: string }[];
    isError?: boolean;
  };
  error?: { code: number; message: string };
}

/** The server as a child, and a JSON-RPC client over its stdio. */
function startServer(args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [SERVER, ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  const waiting = new Map<number | null, (reply: Reply) => void>();
  let buffer = "";
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
      const reply = JSON.parse(buffer.slice(0, at)) as Reply;
      buffer = buffer.slice(at + 1);
      waiting.get(reply.id)?.(reply);
    }
  });
  let next = 0;
  const send = (line: string, id: number | null) =>
    new Promise<Reply>((done) => {
      waiting.set(id, done);
      child.stdin.write(`${line}\n`);
    });
  const call = (method: string, params: unknown = {}) => {
    const id = ++next;
    return send(JSON.stringify({ jsonrpc: "2.0", id, method, params }), id);
  };
  const tool = (name: string, args: unknown = {}) => call("tools/call", { name, arguments: args });
  return { child, call, tool, send };
}

/** A PNG (8-bit RGB, filter 0 rows, as the server writes them) as width, height and a pixel getter. */
function readPng(png: Buffer) {
  expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  expect([png[24], png[25]]).toEqual([8, 2]);
  const chunks: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString("ascii", at + 4, at + 8) === "IDAT") chunks.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(chunks));
  const pixel = (x: number, y: number) => {
    const at = y * (width * 3 + 1) + 1 + x * 3;
    return [raw[at], raw[at + 1], raw[at + 2]];
  };
  return { width, height, pixel, raw };
}

async function screenshot(server: ReturnType<typeof startServer>) {
  const reply = await server.tool("screenshot");
  const image = reply.result?.content?.[0];
  expect(image?.type, JSON.stringify(reply).slice(0, 500)).toBe("image");
  expect(image?.mimeType).toBe("image/png");
  return readPng(Buffer.from(image?.data ?? "", "base64"));
}

/** Pids whose parent is `pid` (read from /proc). */
async function childrenOf(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // Fields after the ")" that ends the command name: state, ppid, ...
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === pid) found.push(Number(entry));
  }
  return found;
}

/** `pid`'s children, their children, and so on. */
async function descendantsOf(pid: number): Promise<number[]> {
  const direct = await childrenOf(pid);
  return [...direct, ...(await Promise.all(direct.map(descendantsOf))).flat()];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(skipReason !== null)("desktop MCP server (Xvfb, xdotool, the Tk app)", () => {
  let dir: string;
  let server: ReturnType<typeof startServer>;
  // No DISPLAY: the server starts its own Xvfb.
  const { DISPLAY: _display, ...env } = process.env;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "desktop-mcp-"));
    await mkdir(join(dir, ".desktop"));
    await writeFile(join(dir, ".desktop", "seed.json"), JSON.stringify({ code: "K7Q-42X" }));
    server = startServer(["--screen", "800x600x24", "--app", APP], dir, env);
  });

  afterAll(async () => {
    if (server?.child.exitCode === null) server.child.kill();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("lists the five computer-use tools", async () => {
    const init = await server.call("initialize", { protocolVersion: "2025-06-18" });
    expect(init.result).toMatchObject({ capabilities: { tools: {} } });
    const list = (await server.call("tools/list")) as { result?: { tools?: { name: string }[] } };
    expect(list.result?.tools?.map((t) => t.name)).toEqual([
      "screenshot",
      "left_click",
      "mouse_move",
      "type",
      "key",
    ]);
  });

  it("screenshots its own Xvfb: the app's window, its blue code, the black screen around it", async () => {
    const shot = await screenshot(server);
    expect([shot.width, shot.height]).toEqual([800, 600]);
    expect(shot.pixel(5, 5)).toEqual([255, 255, 255]);
    expect(shot.pixel(700, 500)).toEqual([0, 0, 0]);
    // The code is drawn in #003399: red and blue swapped would give #993300.
    let blue = 0;
    for (let y = 60; y < 110; y++)
      for (let x = 20; x < 200; x++) if (shot.pixel(x, y).join() === "0,51,153") blue++;
    expect(blue).toBeGreaterThan(50);
    // The app read its seed and removed it: the code is on the screen only.
    await expect(readFile(join(dir, ".desktop", "seed.json"))).rejects.toThrow();
  });

  it("clicks the box, types (a leading '-' too) and presses Return: the app writes what was typed", async () => {
    expect((await server.tool("left_click", { x: 150, y: 150 })).result?.isError).toBeUndefined();
    expect((await server.tool("type", { text: "-K7Q 42X" })).result?.content?.[0]?.text).toBe(
      "typed 8 characters",
    );
    expect((await server.tool("key", { keys: "Return" })).result?.isError).toBeUndefined();
    await expect
      .poll(() => readFile(join(dir, ".desktop", "typed.txt"), "utf8").catch(() => null))
      .toBe("-K7Q 42X");
    expect((await server.tool("key", { keys: "ctrl+a BackSpace" })).result?.isError).toBeUndefined();
    expect((await server.tool("mouse_move", { x: 799, y: 599 })).result?.content?.[0]?.text).toBe(
      "moved to (799, 599)",
    );
  });

  it("bad arguments are tool errors naming what is wrong, and the server goes on", async () => {
    const error = async (name: string, args: unknown) => {
      const reply = await server.tool(name, args);
      expect(reply.result?.isError, JSON.stringify(reply)).toBe(true);
      return reply.result?.content?.[0]?.text ?? "";
    };
    expect(await error("left_click", { x: 800, y: 10 })).toContain("800x600 screen");
    expect(await error("left_click", { x: "1", y: 2 })).toContain("whole pixels");
    expect(await error("mouse_move", { x: -1, y: 2 })).toContain("whole pixels");
    expect(await error("type", { text: "" })).toContain("1 to 2000 characters");
    expect(await error("type", { text: "x".repeat(2001) })).toContain("1 to 2000 characters");
    // Nothing xdotool would read as an option or a command separator.
    for (const keys of ["--help", "Return;ls", "ctrl+", "", "a ".repeat(21)])
      expect(await error("key", { keys })).toContain("xdotool key names");
    const unknown = await server.tool("rm", {});
    expect(unknown.error).toMatchObject({ code: -32602 });
    const parse = await server.send("{not json", null);
    expect(parse.error).toMatchObject({ code: -32700 });
    const method = await server.call("resources/list");
    expect(method.error).toMatchObject({ code: -32601 });
    expect((await screenshot(server)).width).toBe(800);
  });

  it("stops Xvfb and the app when the harness closes its stdin", async () => {
    const pid = server.child.pid as number;
    // Xvfb, and the app's shell with the app under it.
    const started = await descendantsOf(pid);
    expect(started.length).toBe(3);
    const exited = new Promise((done) => server.child.on("exit", done));
    server.child.stdin.end();
    expect(await exited).toBe(0);
    await expect.poll(() => started.filter(alive), { timeout: 5000 }).toEqual([]);
  });

  it("a display that cannot start is each tool's error, naming it; a bad --screen stops at start", async () => {
    // No Xvfb on this PATH (the server runs from process.execPath, so it needs no PATH itself).
    const broken = startServer([], dir, { ...env, PATH: dir });
    try {
      for (const [name, args] of [
        ["screenshot", {}],
        ["left_click", { x: 1, y: 1 }],
      ] as const) {
        const reply = await broken.tool(name, args);
        expect(reply.result?.isError).toBe(true);
        expect(reply.result?.content?.[0]?.text).toContain("Xvfb did not start");
      }
    } finally {
      broken.child.kill();
    }
    const bad = spawnSync(process.execPath, [SERVER, "--screen", "99999x10x24"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--screen WxHxD");
  });

  it.skipIf(!HAVE_XWD)("uses $DISPLAY when set (captured with xwd, its own size)", async () => {
    const xvfb = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "640x480x24", "-nolisten", "tcp"], {
      stdio: ["ignore", "ignore", "ignore", "pipe"],
    });
    try {
      const displayFd = xvfb.stdio[3] as Readable;
      const number = await new Promise<string>((done) =>
        displayFd.once("data", (c: Buffer) => done(String(c).trim())),
      );
      await writeFile(join(dir, ".desktop", "seed.json"), JSON.stringify({ code: "ABC" }));
      const other = startServer(["--app", APP], dir, { ...env, DISPLAY: `:${number}` });
      try {
        const shot = await screenshot(other);
        expect([shot.width, shot.height]).toEqual([640, 480]);
        expect(shot.pixel(5, 5)).toEqual([255, 255, 255]);
        expect((await other.tool("left_click", { x: 700, y: 10 })).result?.content?.[0]?.text).toContain(
          "640x480 screen",
        );
        // No Xvfb of its own: the app's shell and the app only.
        const started = await descendantsOf(other.child.pid as number);
        expect(started.length).toBe(2);
        // The display outlives the server; the app must not.
        const exited = new Promise((done) => other.child.on("exit", done));
        other.child.stdin.end();
        expect(await exited).toBe(0);
        await expect.poll(() => started.filter(alive), { timeout: 5000 }).toEqual([]);
        expect(alive(xvfb.pid as number)).toBe(true);
      } finally {
        other.child.kill();
      }
    } finally {
      xvfb.kill();
    }
  });
});
