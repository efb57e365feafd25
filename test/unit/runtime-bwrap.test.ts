import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapArgs, bwrapRuntimeFactory, POLAR_ROOT } from "../../batch-runner/runtime/bwrap.ts";
import type { Runtime } from "../../batch-runner/runtime/runtime.ts";
import { HOST_NODE_DIR, SANDBOX_BRIDGE_SCRIPT } from "../../batch-runner/runtime/socket-bridge.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";

const problem = bwrapMissing();
if (problem) console.warn(`skipping bwrap runtime tests: ${problem}`);

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

const node = process.execPath;

describe("bwrap command line", () => {
  const dirs = { root: "/s/x", workDir: "/s/x/work", homeDir: "/s/x/home", runDir: "/s/x/run" };

  it("unshares everything as an unprivileged uid, with no host root: system dirs read-only, session dirs writable", () => {
    const args = bwrapArgs({ dirs, cwd: "/s/x/work" });
    expect(args.slice(0, 8)).toEqual([
      "--die-with-parent",
      "--unshare-all",
      "--unshare-user",
      "--uid",
      "1000",
      "--gid",
      "1000",
      "--new-session",
    ]);
    const writable = args.flatMap((a, i) => (a === "--bind" ? [args[i + 1]] : []));
    expect(writable).toEqual(["/s/x/work", "/s/x/home"]);
    // Session binds come after the fresh /tmp, or the tmpfs would hide them.
    expect(args.indexOf("--bind")).toBeGreaterThan(args.lastIndexOf("--tmpfs"));
    expect(args.slice(-4)).toEqual(["--remount-ro", "/", "--chdir", "/s/x/work"]);
    expect(args).not.toContain("--share-net");
    const ro = args.flatMap((a, i) => (a === "--ro-bind" ? [args[i + 1]] : []));
    // The run dir (the bridge socket) is on the host's disk, off the session's volume: read-only.
    expect(ro).toContain("/s/x/run");
    // Never the host's root, /etc as a whole, or the checkout as a whole (a `polar run` store lives in it).
    expect(ro).not.toContain("/");
    expect(ro).not.toContain("/etc");
    expect(ro).not.toContain(POLAR_ROOT);
    expect(
      ro.filter((p) => p.startsWith("/etc/")).every((p) => !/shadow|sudoers|npmrc|pip\.conf/.test(p)),
    ).toBe(true);
    expect(ro).toContain(SANDBOX_BRIDGE_SCRIPT);
    // Node and the bridge are bound after the fresh /tmp: a checkout under /tmp must still work.
    expect(args.indexOf(HOST_NODE_DIR)).toBeGreaterThan(args.lastIndexOf("--tmpfs"));
    expect(args.indexOf(SANDBOX_BRIDGE_SCRIPT)).toBeGreaterThan(args.lastIndexOf("--tmpfs"));
  });

  it("with an image root, brings in node, the bridge script and extra read-only paths; hides what must stay hidden", () => {
    const args = bwrapArgs({
      dirs,
      cwd: "/s/x/work",
      image: "/images/root",
      readOnly: ["/cache"],
      hidden: ["/cache/store", "/elsewhere"],
    });
    expect(args.slice(8, 11)).toEqual(["--ro-bind", "/images/root", "/"]);
    const ro = args.flatMap((a, i) => (a === "--ro-bind" ? [args[i + 1]] : []));
    expect(ro).toEqual([
      "/images/root",
      HOST_NODE_DIR,
      SANDBOX_BRIDGE_SCRIPT,
      `${POLAR_ROOT}/examples`,
      "/cache",
      "/s/x/run",
    ]);
    // A hidden path inside a read-only bind gets an empty tmpfs over it; one outside every bind needs none.
    expect(args.indexOf("/cache/store")).toBe(args.indexOf("--tmpfs", args.indexOf("/cache")) + 1);
    expect(args).not.toContain("/elsewhere");
  });
});

describe.skipIf(problem !== null)("bwrap runtime", () => {
  let root: string;
  let proxy: Server;
  let other: Server;
  let proxyUrl: string;
  let otherUrl: string;
  let rt: Runtime;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-bwrap-"));
    proxy = createServer((req, res) => res.end(`proxy-ok ${req.method} ${req.url}`));
    other = createServer((_req, res) => res.end("should-not-be-reached"));
    proxyUrl = await listen(proxy);
    otherUrl = await listen(other);
    rt = await bwrapRuntimeFactory({ sessionsRoot: join(root, "sessions") }).create({
      sessionId: "sandboxed",
      env: {},
      limits: {},
      proxyUrl,
    });
  });

  afterAll(async () => {
    await rt?.stop();
    proxy?.closeAllConnections();
    other?.closeAllConnections();
    await new Promise((r) => proxy.close(r));
    await new Promise((r) => other.close(r));
    await rm(root, { recursive: true, force: true });
  });

  const fetchScript = (url: string) =>
    `fetch(${JSON.stringify(url)}).then(r => r.text()).then(t => console.log("OK " + t), e => console.log("FAIL " + (e.cause?.code ?? e.message)))`;

  it("reaches the proxy through the Unix-socket bridge at its in-sandbox URL", async () => {
    expect(rt.proxyUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(rt.proxyUrl).not.toBe(proxyUrl);
    const res = await rt.exec([node, "-e", fetchScript(`${rt.proxyUrl}/v1/models`)]);
    expect(res.stderr).toBe("");
    expect(res.stdout.trim()).toBe("OK proxy-ok GET /v1/models");
  });

  it("blocks every other network destination, even the host's own loopback", async () => {
    const direct = await rt.exec([node, "-e", fetchScript(otherUrl)]);
    expect(direct.stdout.trim()).toMatch(/^FAIL /);
    // The proxy's real host address is not reachable either: only the bridge is.
    const proxyDirect = await rt.exec([node, "-e", fetchScript(proxyUrl)]);
    expect(proxyDirect.stdout.trim()).toMatch(/^FAIL /);
  });

  it("lets the agent write its work dir and home, and nothing else on the host", async () => {
    // The checkout is writable on the host, invisible (read-only root) in the sandbox.
    const outside = join(process.cwd(), `.bwrap-escape-${process.pid}.txt`);
    // Under /tmp the write lands in the sandbox's private tmpfs, never on the host.
    const hostTmp = join(root, "escaped.txt");
    const script = [
      "echo w > work.txt",
      'echo h > "$HOME/home.txt"',
      `echo x > ${outside} 2>/dev/null && echo ESCAPED-ROOT`,
      `echo x > ${hostTmp}`,
      "echo x > /etc/polar-escape 2>/dev/null && echo ESCAPED-ETC",
      "echo t > /tmp/scratch.txt && echo TMP-OK",
    ].join("; ");
    const res = await rt.exec(["sh", "-c", script]);
    // A checkout under /tmp sits in the sandbox's tmpfs: the write "succeeds" there, never on the
    // host (checked below); elsewhere the read-only root refuses it outright.
    if (!process.cwd().startsWith("/tmp/")) expect(res.stdout).not.toContain("ESCAPED-ROOT");
    expect(res.stdout).not.toContain("ESCAPED-ETC");
    expect(res.stdout).toContain("TMP-OK");
    expect(await readFile(join(rt.workDir, "work.txt"), "utf8")).toBe("w\n");
    expect(await readFile(join(rt.homeDir, "home.txt"), "utf8")).toBe("h\n");
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(hostTmp)).toBe(false);
    expect(existsSync("/etc/polar-escape")).toBe(false);
  });

  it("kills the sandbox at the timeout and passes exit codes through the bridge", async () => {
    const timed = await rt.exec(["sleep", "30"], { timeoutMs: 300 });
    expect(timed.timedOut).toBe(true);
    const code = await rt.exec(["sh", "-c", "exit 7"]);
    expect(code.exitCode).toBe(7);
  });
});
