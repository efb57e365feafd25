import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditStrace, connectsOtherThan, externalConnects } from "../../test/e2e/strace-connects.ts";

/** strace present and allowed to trace (ptrace can be denied in containers). */
const HAVE_STRACE =
  spawnSync("strace", ["-f", "-qq", "-e", "trace=connect", "-o", "/dev/null", "true"]).status === 0;

describe("auditStrace on recorded lines", () => {
  const trace = [
    "100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>",
    '100 connect(20, {sa_family=AF_INET, sin_port=htons(8000), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
    "100 <... clone resumed>) = 200",
    '200 execve("/cache/codex@1/node_modules/.bin/codex", ["codex"], 0x7ff /* 9 vars */) = 0',
    "200 clone3({flags=CLONE_VM|CLONE_THREAD, ...}, 88) = 201",
    '201 connect(5, {sa_family=AF_INET, sin_port=htons(8787), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS',
    '201 connect(6, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT',
    '201 connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = 0',
    '201 connect(8, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH',
    '300 execve("/usr/bin/git", ["git"], 0x7ff) = 0',
  ].join("\n");

  it("finds the harness's process tree and flags what it reached besides the proxy", () => {
    const audit = auditStrace(trace, "/cache/codex@1/");
    expect([...audit.harnessPids].sort()).toEqual([200, 201]);
    const bad = connectsOtherThan(audit.connects, audit.harnessPids, 8787);
    expect(bad.map((c) => `${c.address}:${c.port}`)).toEqual(["10.0.0.2:53", "2001:db8::1:443"]);
    // polar's own connect to the policy (pid 100) is loopback: fine for the whole-run check.
    expect(externalConnects(audit.connects).map((c) => c.pid)).toEqual([201, 201]);
  });

  it("follows threads and children inside a pid namespace (the sandbox) by strace's translated pids", () => {
    const sandboxed = [
      '500 execve("/cache/codex@1/bin/codex", ["codex"], 0x7ff /* 9 vars */) = 0',
      "500 clone3({flags=CLONE_VM|CLONE_THREAD, ...}, 88) = 4 /* 501 in strace's PID NS */",
      '501 connect(5, {sa_family=AF_INET, sin_port=htons(18787), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
      '501 connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = 0',
    ].join("\n");
    const audit = auditStrace(sandboxed, "/cache/codex@1/");
    expect([...audit.harnessPids].sort()).toEqual([500, 501]);
    expect(connectsOtherThan(audit.connects, audit.harnessPids, 18787).map((c) => c.port)).toEqual([53]);
  });

  it("joins the calls another thread split (<unfinished ...>, <... resumed>) before reading them", () => {
    const split = [
      '600 execve("/cache/codex@1/bin/codex", ["codex"], 0x7ff /* 9 vars */ <unfinished ...>',
      "700 clone(child_stack=NULL, flags=SIGCHLD) = 701",
      "600 <... execve resumed>) = 0",
      "600 clone3({flags=CLONE_VM|CLONE_THREAD, ...} <unfinished ...>",
      "600 <... clone3 resumed>, 88) = 4 /* 602 in strace's PID NS */",
      '602 bind(21, {sa_family=AF_INET, sin_port=htons(8765), sin_addr=inet_addr("127.0.0.1")}, 16 <unfinished ...>',
      '600 bind(22, {sa_family=AF_INET, sin_port=htons(9000), sin_addr=inet_addr("127.0.0.1")}, 16 <unfinished ...>',
      "602 <... bind resumed>)           = 0",
      "600 <... bind resumed>)           = -1 EADDRINUSE (Address already in use)",
      '602 connect(8, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>',
      "602 <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)",
    ].join("\n");
    const audit = auditStrace(split, "/cache/codex@1/");
    expect([...audit.harnessPids].sort()).toEqual([600, 602]);
    expect(audit.binds).toEqual([{ pid: 602, port: 8765 }]);
    expect(
      audit.connects.map((c) => [
        c.pid,
        c.port,
        c.line.endsWith("= -1 ENETUNREACH (Network is unreachable)"),
      ]),
    ).toEqual([[602, 443, true]]);
  });

  it("a clean harness passes", () => {
    const clean = trace
      .split("\n")
      .filter((l) => !l.includes("10.0.0.2") && !l.includes("2001:db8"))
      .join("\n");
    const audit = auditStrace(clean, "/cache/codex@1/");
    expect(connectsOtherThan(audit.connects, audit.harnessPids, 8787)).toEqual([]);
    expect(externalConnects(audit.connects)).toEqual([]);
  });
});

describe.skipIf(!HAVE_STRACE)("auditStrace on real strace output", () => {
  let dir: string;
  const servers: Server[] = [];
  const ports: number[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "strace-audit-"));
    for (let i = 0; i < 2; i++) {
      const server = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      servers.push(server);
      ports.push((server.address() as AddressInfo).port);
    }
  });

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it("tells a child started from the harness dir apart and sees each of its connects", async () => {
    // The "harness" is node started through a link inside harnessRoot, like a CLI in .bin.
    const harnessRoot = join(dir, "cache");
    await mkdir(harnessRoot);
    const fakeCli = join(harnessRoot, "fake-cli");
    await symlink(process.execPath, fakeCli);
    const [allowed, other] = ports;
    const connect = (port: number) =>
      `await new Promise(r => { const s = require("net").connect(${port}, "127.0.0.1", () => { s.destroy(); r(); }); s.on("error", r); });`;
    const child = `(async () => { ${connect(allowed as number)} ${connect(other as number)} process.exit(0); })()`;
    const parent = `(async () => { ${connect(allowed as number)} require("child_process").spawnSync(${JSON.stringify(fakeCli)}, ["-e", ${JSON.stringify(child)}], { stdio: "inherit", timeout: 20000 }); })()`;
    const traceFile = join(dir, "trace.txt");
    // Async: the listening servers live in this process and must keep accepting meanwhile.
    const status = await new Promise<number | null>((resolve) => {
      const straced = spawn(
        "strace",
        [
          "-f",
          "-qq",
          "-e",
          "trace=connect,execve,clone,clone3,fork,vfork",
          "-o",
          traceFile,
          process.execPath,
          "-e",
          parent,
        ],
        { stdio: "ignore", timeout: 30_000 },
      );
      straced.on("close", resolve);
    });
    expect(status).toBe(0);
    const audit = auditStrace(await readFile(traceFile, "utf8"), harnessRoot);
    expect(audit.harnessPids.size).toBeGreaterThan(0);
    const bad = connectsOtherThan(audit.connects, audit.harnessPids, allowed as number);
    expect(bad.map((c) => c.port)).toEqual([other]);
    // The parent's connect to the same allowed port is not attributed to the harness.
    const harnessAllowed = audit.connects.filter((c) => audit.harnessPids.has(c.pid) && c.port === allowed);
    const allAllowed = audit.connects.filter((c) => c.port === allowed);
    expect(harnessAllowed.length).toBe(1);
    expect(allAllowed.length).toBe(2);
  });
});
