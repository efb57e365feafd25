import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapProblem } from "../../batch-runner/runtime/bwrap.ts";
import { keys } from "../../shared/keys.ts";
import type { DirectoryStore } from "../../shared/node/directory-store.ts";
import type { SessionResult } from "../../shared/schemas/trajectory.ts";
import { neighbourTask, runTasks } from "../support/flood-run.ts";

/*
 * Issue 41, items 4 and 5 in one `polar run` (bwrap, the dry-run policy as the engine, in the run's
 * own process): one session floods its count_tokens route (12 workers, ~66 KB counts, under
 * `max_in_flight: 2` and 100,000 tokens a minute), another sends ~900 KB calls the engine refuses
 * (400, under 5,000 tokens a minute), both for HOLD_MS, beside two ordinary sessions judged by
 * their outputs. The neighbours COMPLETE with reward 1; each flooder gets its share and then 429s.
 * On the old code every count went through to the engine and every refused call was captured.
 */
const problem = bwrapProblem();
if (problem && process.env.CI === "true") throw new Error(`proxy-flood: required under CI but ${problem}`);
if (problem) console.warn(`proxy-flood: skipped: ${problem}`);

const tag = randomBytes(4).toString("hex");
const idOf = (name: string) => `p${tag}-${name}`;
const HOLD_MS = 20_000;
/** The count flooder's limits. */
const COUNT_LIMITS = { max_in_flight: 2, tokens_per_minute: 100_000 };
/** What one count costs at least: the dry-run policy counts the flood's text as 44,093 tokens. */
const COUNT_COST = 44_000;

/**
 * `workers` loops that send `path` with `body` (built from `words` distinct words) every 500 ms
 * for HOLD_MS; prints the statuses and the slowest answer.
 */
function flood(label: string, path: string, headers: string, body: string, words: number, workers: number) {
  const script = `
const base = process.env.ANTHROPIC_BASE_URL, key = process.env.ANTHROPIC_API_KEY;
const text = Array.from({ length: ${words} }, (_, i) => "w" + (i * 7919 % 100000).toString(36)).join(" ");
const body = JSON.stringify(${body});
const statuses = {};
let slowest = 0;
const end = Date.now() + ${HOLD_MS};
const worker = async () => {
  while (Date.now() < end) {
    let s = "error";
    const t = Date.now();
    try {
      const r = await fetch(base + "${path}", { method: "POST", headers: ${headers}, body });
      await r.arrayBuffer();
      s = r.status;
    } catch {}
    statuses[s] = (statuses[s] || 0) + 1;
    slowest = Math.max(slowest, Date.now() - t);
    await new Promise((r) => setTimeout(r, 500));
  }
};
Promise.all(Array.from({ length: ${workers} }, worker)).then(() => {
  console.log("${label} bytes=" + body.length + " slowest_ms=" + slowest + " " + JSON.stringify(statuses));
});
`;
  return `node -e '${script.replaceAll("'", "'\\''")}'`;
}

/**
 * 12 workers counting ~66 KB of dense text (~44,000 tokens: the dry-run policy tokenizes it in
 * about a second, in the run's own process) under `max_in_flight: 2` and 100,000 tokens a minute.
 */
const counter = flood(
  "COUNT",
  "/v1/messages/count_tokens",
  `{ "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" }`,
  `{ model: "m", messages: [{ role: "user", content: text }] }`,
  12_000,
  12,
);
/**
 * 2 workers sending ~900 KB calls the engine refuses (400: `top_logprobs` past its 20, as vLLM's
 * default `max_logprobs`), under 5,000 tokens a minute.
 */
const refused = flood(
  "REFUSED",
  "/v1/chat/completions",
  `{ authorization: "Bearer " + key, "content-type": "application/json" }`,
  `{ model: "m", messages: [{ role: "user", content: text }], logprobs: true, top_logprobs: 25 }`,
  160_000,
  2,
);

const TASKS = [
  {
    task_id: idOf("count-flood"),
    instruction: "(the count_tokens flood is the shell command)",
    timeout_seconds: 90,
    agent: {
      harness: "shell",
      settings: { command: counter },
      proxy_limits: COUNT_LIMITS,
    },
  },
  {
    task_id: idOf("refused-flood"),
    instruction: "(the refused calls are the shell command)",
    timeout_seconds: 90,
    agent: { harness: "shell", settings: { command: refused }, proxy_limits: { tokens_per_minute: 5000 } },
  },
  // Its sleep puts every model call and the judge inside the floods.
  neighbourTask(idOf("neighbour")),
];

let dir: string;
let output = "";
let code: number | null = null;
let wallMs = 0;
let store: DirectoryStore;
let results = new Map<string, SessionResult[]>();

beforeAll(async () => {
  if (problem) return;
  dir = await mkdtemp(join(tmpdir(), "polar-proxy-flood-"));
  ({ code, output, wallMs, store, results } = await runTasks(dir, TASKS));
  const runs = (results.get(idOf("neighbour")) ?? []).map((r) => r.timings.run_ms);
  if (process.env.PROXY_FLOOD_VERBOSE) console.log(output);
  console.log(
    `proxy-flood: polar run exited ${code} in ${(wallMs / 1000).toFixed(1)} s; neighbours' run_ms ${runs.join(", ")}`,
  );
}, 180_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The flooder's printed line, and its statuses. */
function floodLine(id: string, label: string): { line: string; statuses: Record<string, number> } {
  const [r] = results.get(idOf(id)) ?? [];
  const line = (r?.agent?.final_answer ?? "").match(new RegExp(`${label} .*`))?.[0] ?? "";
  console.log(`proxy-flood: ${line}`);
  const json = line.slice(line.indexOf("{"));
  return { line, statuses: json.startsWith("{") ? JSON.parse(json) : {} };
}

describe.skipIf(problem !== null)("sessions flooding their proxy routes, beside two neighbours", () => {
  it("the neighbours COMPLETE with their rewards", () => {
    const list = results.get(idOf("neighbour")) ?? [];
    expect(list, output.slice(-3000)).toHaveLength(2);
    for (const r of list) {
      expect(r.status, r.error ?? "").toBe("COMPLETED");
      expect(r.reward).toBe(1);
    }
    expect(code, output.slice(-3000)).toBe(0);
  });

  it("count_tokens: at most max_in_flight counts reach the engine at once, and a count costs its tokens", () => {
    const { line, statuses } = floodLine("count-flood", "COUNT");
    expect(line, output.slice(-3000)).toMatch(/bytes=6\d{4} /);
    // A count is admitted while its session's bucket is above zero and charged when it ends, so
    // up to max_in_flight get in on one positive balance. The bucket starts at 100,000 and refills
    // 100,000 a minute: within HOLD_MS it takes in at most 133,333 tokens, so at most 3 charged
    // counts leave it above zero, and 2 more may be in flight then (5). Most runs get 4 (two
    // waves of two, then far below zero); 5 when only 3 went through before it dropped below zero
    // and the refill lifted it again at ~19.4 s (seen in CI). The old code let 46-52 through.
    const charged = Math.floor((COUNT_LIMITS.tokens_per_minute * (1 + HOLD_MS / 60_000)) / COUNT_COST);
    expect(statuses["200"] ?? 0).toBeGreaterThan(0);
    expect(statuses["200"] ?? 0).toBeLessThanOrEqual(charged + COUNT_LIMITS.max_in_flight);
    // A flood, refused: several times the admitted counts (how many depends on the machine's load).
    expect((statuses["429"] ?? 0) + (statuses.error ?? 0)).toBeGreaterThan(
      4 * (charged + COUNT_LIMITS.max_in_flight),
    );
    for (const status of Object.keys(statuses)) expect(["200", "429", "error"]).toContain(status);
  });

  it("refused calls cost their size: one wave reaches the engine, the rest get 429, few captures", async () => {
    const { line, statuses } = floodLine("refused-flood", "REFUSED");
    expect(line, output.slice(-3000)).toMatch(/bytes=8\d{5} /);
    expect(statuses["400"] ?? 0).toBeGreaterThan(0);
    // Both workers' first calls were admitted before either was charged; none after.
    expect(statuses["400"] ?? 0).toBeLessThanOrEqual(2);
    // The rest refused before their bodies were parsed: 429, or (for some of these 900 KB bodies
    // the proxy did not read) the connection closed under them. How many calls two workers get
    // through in HOLD_MS depends on the machine's load (19 in one CI run), so what is
    // held is that every one past the admitted ones was refused.
    expect(statuses["429"] ?? 0).toBeGreaterThan(10);
    for (const status of Object.keys(statuses)) expect(["400", "429", "error"]).toContain(status);
    const captures = await store.list(keys.capturesOfTask(idOf("refused-flood")));
    expect(captures.length).toBeLessThanOrEqual(2);
  });
});
