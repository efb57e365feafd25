import { RewardError, setReward } from "../../batch-runner/evaluation/manual-reward.ts";
import { isValidId } from "../../shared/ids.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, storeFlag } from "../flags.ts";

const usage = `Usage: polar reward --task T --session S --value X --store DIR|s3://bucket/prefix [--note TEXT]

Scores a session no evaluator ran: a hosted harness's session, reconstructed with
\`polar reconstruct\`, has reward null. Sets the session's reward to X (every trace gets it, as
with an evaluator's outcome reward), records evaluation.evaluator "manual" (with --note), and
rewrites the task's group shard when every sample has a result. Only a COMPLETED session can be
scored; running it again replaces the reward.

  --task T      task id
  --session S   session id
  --value X     the reward, a finite number (e.g. 1, 0, 0.5)
  --store SPEC  the proxy's store: a directory or s3://bucket/prefix
  --note TEXT   kept in the result's evaluation metadata`;

const command: Command = {
  summary: "set the reward of a session no evaluator ran (hosted harnesses)",
  usage,
  async run(argv) {
    const { values } = parseFlags({
      args: argv,
      options: {
        task: { type: "string" },
        session: { type: "string" },
        value: { type: "string" },
        store: { type: "string" },
        note: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
    for (const flag of ["task", "session", "value", "store"] as const) {
      if (values[flag] === undefined) throw new UsageError(`--${flag} is required`);
    }
    const taskId = values.task as string;
    const sessionId = values.session as string;
    if (!isValidId(taskId)) throw new UsageError(`--task ${JSON.stringify(taskId)} is not a valid id`);
    if (!isValidId(sessionId))
      throw new UsageError(`--session ${JSON.stringify(sessionId)} is not a valid id`);
    const value = Number(values.value);
    if (values.value?.trim() === "" || !Number.isFinite(value)) {
      throw new UsageError(`--value must be a finite number, got ${JSON.stringify(values.value)}`);
    }
    const store = await storeFlag(values.store as string);
    try {
      const { result, shard } = await setReward({ store, taskId, sessionId, value, note: values.note });
      console.log(`${sessionId}: reward ${result.reward} (${result.trajectory.traces.length} traces)`);
      console.log(
        shard
          ? `shard: ${shard.key ?? "(no Parquet: no traces)"} and ${shard.jsonlKey} rewritten, ${shard.rows} rows`
          : "shard: not written yet, not every sample of the task has a result",
      );
      return 0;
    } catch (err) {
      if (err instanceof RewardError) {
        console.error(`polar reward: ${err.message}`);
        return 1;
      }
      throw err;
    }
  },
};

export default command;
