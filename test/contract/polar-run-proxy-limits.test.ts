import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../shared/node/open-store.ts";
import { readCaptures } from "../support/proxy.ts";

/**
 * A task's agent.proxy_limits goes runner -> session token (`lim` claim) -> proxy: an agent that
 * sends 8 calls at once under max_in_flight 1 has some refused (429, not captured), while the
 * same agent under the runner's default (16) has all 8 answered and captured.
 */
const repo = fileURLToPath(new URL("../../", import.meta.url));
const BURST = 8;
// The agent: BURST concurrent calls, then print their statuses.
const AGENT = `const u=process.env.POLAR_PROXY_URL+"/v1/chat/completions";const h={authorization:"Bearer "+process.env.POLAR_SESSION_TOKEN,"content-type":"application/json"};const b=JSON.stringify({model:process.env.POLAR_MODEL,messages:[{role:"user",content:"hi"}]});Promise.all(Array.from({length:${BURST}},()=>fetch(u,{method:"POST",headers:h,body:b}).then(r=>r.status))).then(s=>console.log("statuses "+s.join(",")))`;

const task = (task_id: string, proxy_limits?: Record<string, number>) => ({
  task_id,
  num_samples: 1,
  timeout_seconds: 60,
  instruction: "Call the model.",
  agent: {
    harness: "shell",
    env: { BURST_AGENT: AGENT },
    settings: { command: 'node -e "$BURST_AGENT"' },
    ...(proxy_limits ? { proxy_limits } : {}),
  },
});

let out: string;
beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), "polar-run-proxy-limits-"));
});
afterAll(() => rm(out, { recursive: true, force: true }));

async function capturesOf(taskId: string) {
  const store = openStore(join(out, "store"));
  const sessions = await store.list(`captures/${taskId}/`);
  expect(sessions.length).toBeGreaterThan(0);
  return readCaptures(store, taskId, sessions[0].split("/")[2]);
}

describe("agent.proxy_limits through polar run", () => {
  it("is enforced by the proxy for the task's sessions; a task without it gets the runner's defaults", async () => {
    const tasks = join(out, "tasks.jsonl");
    await writeFile(
      tasks,
      `${JSON.stringify(task("burst-limited", { max_in_flight: 1 }))}\n${JSON.stringify(task("burst-default"))}\n`,
    );
    const res = spawnSync(process.execPath, [join(repo, "bin/polar.js"), "run", tasks, "--out", out], {
      cwd: repo,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(res.status, res.stderr).toBe(0);
    const limited = await capturesOf("burst-limited");
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeLessThan(BURST);
    expect(limited.every((c) => c.error === null)).toBe(true);
    expect(await capturesOf("burst-default")).toHaveLength(BURST);
  }, 150_000);
});
