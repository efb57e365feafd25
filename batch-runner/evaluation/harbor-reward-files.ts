import { open } from "node:fs/promises";
import type { HarborConfig } from "../../shared/schemas/task-settings.ts";
import { allowedHostFile, type ModulePolicy } from "./evaluator-dirs.ts";

const REWARD_FILES = ["reward.json", "reward.txt"] as const;
export type RewardFileName = (typeof REWARD_FILES)[number];

/**
 * The reward files the task's tests write: a name none of them mentions is never read. The tests run
 * the agent's code in the same runtime, as the same user, so that code can write into the verifier
 * dir too: a `reward.json` it wrote first would win over the `reward.txt` the tests write after it.
 * Tests held on the runner's host (`from`) are read there, as inline tests are (issue 49: before,
 * one such file made both names count). Tests that name neither leave both.
 */
export async function rewardFiles(
  tests: HarborConfig["tests"],
  hostFiles: ModulePolicy = { allowed: [], denied: [] },
): Promise<RewardFileName[]> {
  const named = new Set<RewardFileName>();
  for (const [path, source] of Object.entries(tests)) {
    const found =
      typeof source === "object" && "from" in source
        ? await namesInHostFile(
            await allowedHostFile(
              source.from,
              hostFiles,
              `evaluator.config.tests[${JSON.stringify(path)}].from`,
            ),
          )
        : namesIn(Buffer.from(typeof source === "string" ? source : source.content));
    for (const name of found) named.add(name);
  }
  return named.size ? REWARD_FILES.filter((n) => named.has(n)) : [...REWARD_FILES];
}

function namesIn(bytes: Buffer): RewardFileName[] {
  return REWARD_FILES.filter((n) => bytes.includes(n, 0, "latin1"));
}

/** Read in chunks (a host-held test may be a large data file), a name split across two caught by the overlap. */
async function namesInHostFile(path: string): Promise<RewardFileName[]> {
  const found = new Set<RewardFileName>();
  const overlap = Math.max(...REWARD_FILES.map((n) => n.length)) - 1;
  const handle = await open(path, "r");
  try {
    const chunk = Buffer.alloc(1 << 20);
    let carry = Buffer.alloc(0);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      const window = Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
      for (const name of namesIn(window)) found.add(name);
      if (found.size === REWARD_FILES.length) break;
      carry = Buffer.from(window.subarray(Math.max(0, window.length - overlap)));
    }
  } finally {
    await handle.close();
  }
  return REWARD_FILES.filter((n) => found.has(n));
}
