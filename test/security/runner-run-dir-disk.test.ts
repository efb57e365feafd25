import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem, bwrapRuntimeFactory } from "../../batch-runner/runtime/bwrap.ts";
import { diskVolumeSupport } from "../../batch-runner/runtime/disk-volume.ts";

/*
 * Issue 41, item 1: with `disk_mb: 64`, an agent wrote 200 MiB and 20,000 files into its session's
 * `run` dir (the bridge socket's dir, bound read-write on the host's disk, off the volume) and the
 * session COMPLETED. The run dir is now read-only inside every sandbox: the same writes fail with
 * EROFS, the host dir keeps only the socket, and the proxy is still reached through it.
 */
const problem = bwrapProblem() ?? (diskVolumeSupport() === true ? null : `disk: ${diskVolumeSupport()}`);
if (problem) console.warn(`runner-run-dir-disk: skipped: ${problem}`);

/** Finds the run dir from the bridge's command line (the agent sees it in /proc), then fills it. */
const RUN_DIR_ATTACK = [
  `RUN=$(for f in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < "$f" 2>/dev/null; done | grep '/proxy.sock$' | head -1)`,
  'RUN=$(dirname "$RUN")',
  'echo "RUN $RUN"',
  '{ head -c 209715200 /dev/zero >"$RUN/fill"; } 2>&1 | grep -o "Read-only file system" | head -1',
  'i=0; while [ $i -lt 20000 ]; do true 2>/dev/null >"$RUN/f$i" || break; i=$((i+1)); done; echo "FILES $i"',
].join("\n");

describe.skipIf(problem !== null)("the run dir of a bwrap session with disk_mb 64", () => {
  let root: string;
  let proxy: Server;
  let proxyUrl: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "polar-rundir-"));
    proxy = createServer((req, res) => res.end(`proxy-ok ${req.url}`));
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((r) => proxy.close(r));
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("refuses 200 MiB and 20,000 files there (EROFS); the host dir keeps only the socket; the bridge still works", async () => {
    const rt = await bwrapRuntimeFactory({ sessionsRoot: join(root, "sessions") }).create({
      sessionId: "rundir-fill",
      env: {},
      limits: { disk_mb: 64 },
      proxyUrl,
    });
    try {
      const runDir = join(rt.workDir, "..", "..", "run");
      const res = await rt.exec(["sh", "-c", RUN_DIR_ATTACK], { timeoutMs: 60_000 });
      expect(res.stdout, res.stderr).toContain(`RUN ${runDir}\n`);
      expect(res.stdout).toContain("Read-only file system");
      expect(res.stdout).toContain("FILES 0\n");
      const left = await readdir(runDir);
      expect(left).toEqual(["proxy.sock"]);
      expect((await stat(join(runDir, "proxy.sock"))).isSocket()).toBe(true);
      // The work dir is still the agent's, and on the volume.
      const work = await rt.exec(["sh", "-c", "echo kept > kept.txt && cat kept.txt"]);
      expect(work.stdout).toBe("kept\n");
      const fetched = await rt.exec([
        "node",
        "-e",
        `fetch(${JSON.stringify(`${rt.proxyUrl}/v1/models`)}).then(r=>r.text()).then(t=>console.log(t))`,
      ]);
      expect(fetched.stdout.trim(), fetched.stderr).toBe("proxy-ok /v1/models");
    } finally {
      await rt.stop();
    }
  }, 90_000);
});
