/**
 * Harbor's verifier reads `/logs/verifier/reward.json` when it exists (a flat JSON object of named
 * rewards), else `/logs/verifier/reward.txt` (one number); neither is an error, as are an empty file,
 * a non-numeric or non-finite value (harbor/verifier/verifier.py). Polar keeps those rules, and takes
 * as the outcome reward the key `reward_key` of reward.json, or its only key.
 */
export interface HarborReward {
  reward: number;
  /** Every reward the tests wrote (reward.json), or `{reward}` (reward.txt). */
  rewards: Record<string, number>;
  from: "reward.json" | "reward.txt";
}

export class HarborRewardError extends Error {}

export function parseHarborReward(
  files: { json: string | null; text: string | null },
  rewardKey: string,
): HarborReward {
  if (files.json !== null) {
    if (files.json.trim() === "") throw new HarborRewardError("reward.json is empty");
    let parsed: unknown;
    try {
      parsed = JSON.parse(files.json);
    } catch (err) {
      throw new HarborRewardError(`reward.json is not JSON (${(err as Error).message})`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new HarborRewardError("reward.json is not a JSON object of named rewards");
    }
    const rewards: Record<string, number> = {};
    for (const [key, value] of Object.entries(parsed)) {
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw new HarborRewardError(
          `reward.json: ${JSON.stringify(key)} is ${JSON.stringify(value)}, not a finite number`,
        );
      }
      rewards[key] = value;
    }
    const keys = Object.keys(rewards);
    const key = Object.hasOwn(rewards, rewardKey) ? rewardKey : keys.length === 1 ? keys[0] : null;
    if (key === null) {
      throw new HarborRewardError(
        `reward.json has no ${JSON.stringify(rewardKey)} among its ${keys.length} rewards (${keys.join(", ") || "none"}); set evaluator.config.reward_key`,
      );
    }
    return { reward: rewards[key], rewards, from: "reward.json" };
  }
  if (files.text !== null) {
    const text = files.text.trim();
    if (text === "") throw new HarborRewardError("reward.txt is empty");
    const value = Number(text);
    if (!Number.isFinite(value))
      throw new HarborRewardError(
        `reward.txt holds ${JSON.stringify(text.slice(0, 100))}, not a finite number`,
      );
    return { reward: value, rewards: { reward: value }, from: "reward.txt" };
  }
  throw new HarborRewardError(
    "the tests wrote neither /logs/verifier/reward.json nor /logs/verifier/reward.txt",
  );
}
