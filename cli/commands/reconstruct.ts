import { readManualRewards, setReward } from "../../batch-runner/evaluation/manual-reward.ts";
import { reconstructTask, TaskFileError } from "../../batch-runner/reconstruction/reconstruct-task.ts";
import { ShardInputError } from "../../batch-runner/shards/write-group-shard.ts";
import { isValidId } from "../../shared/ids.ts";
import { openStore, StoreSpecError } from "../../shared/node/open-store.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags } from "../flags.ts";

const usage = `Usage: polar reconstruct --task T [--session S] --store DIR|s3://bucket/prefix

Builds trajectories for sessions no runner ran (hosted harnesses that talked to the proxy with
a token from \`polar token\`): for each session under captures/{T}/ (or only S), reconstructs
its traces, writes results/{T}/{session}.json (status COMPLETED, reward null: score it with
\`polar reward --task T --session S --value X\`; a reward set that way is kept when the
session is reconstructed again), then writes the
group shard trajectories/{T}.parquet (+ .jsonl) once every sample of the task has a result.
The builder comes from tasks/{T}.json when present, else prefix_merging; without a task file
the group is every session that has captures.

  --task T      task id
  --session S   only this session
  --store SPEC  a directory or s3://bucket/prefix (S3 settings from the AWS_* environment)`;

const command: Command = {
  summary: "build trajectories for sessions no runner ran (hosted harnesses)",
  usage,
  async run(argv) {
    const { values } = parse(argv);
    const taskId = values.task;
    if (!taskId) throw new UsageError("--task is required");
    if (!isValidId(taskId)) throw new UsageError(`--task ${JSON.stringify(taskId)} is not a valid id`);
    if (values.session !== undefined && !isValidId(values.session)) {
      throw new UsageError(`--session ${JSON.stringify(values.session)} is not a valid id`);
    }
    if (!values.store) throw new UsageError("--store is required");
    let store: ReturnType<typeof openStore>;
    try {
      store = openStore(values.store);
    } catch (err) {
      if (err instanceof StoreSpecError) throw new UsageError(err.message);
      throw err;
    }
    try {
      // A reward set by hand (`polar reward`) is a judgement of the session, not of this build of
      // it: it is set again on the rebuilt result rather than lost to a rerun.
      const manual = await readManualRewards(store, taskId, values.session);
      const out = await reconstructTask({ store, taskId, sessionId: values.session });
      if (out.results.length === 0) {
        const where =
          values.session === undefined ? `captures/${taskId}/` : `captures/${taskId}/${values.session}/`;
        console.error(`polar reconstruct: no captures under ${where} in ${store.url}`);
        return 1;
      }
      for (const r of out.results) {
        const s = r.trajectory.reconstruction_stats;
        console.log(
          `${r.session_id}: ${r.status}, ${r.trajectory.traces.length} traces from ${s.captures} captures ` +
            `(${s.excluded_failed + s.excluded_no_token_ids} excluded, ${s.prefix_breaks} prefix breaks), ` +
            `${s.trainable_tokens} trainable tokens, ${s.capture_gaps} capture gaps, ${s.orphans} orphans` +
            `${breakReasons(s.break_reasons)}${r.error ? `: ${r.error}` : ""}`,
        );
      }
      for (const r of out.results) {
        const kept = manual.get(r.session_id);
        if (!kept) continue;
        if (r.status !== "COMPLETED") {
          console.error(
            `polar reconstruct: ${r.session_id} is now ${r.status}: the reward ${kept.value} set with polar reward was dropped`,
          );
          continue;
        }
        await setReward({ store, taskId, sessionId: r.session_id, ...kept });
        console.log(`${r.session_id}: kept the reward ${kept.value} set with polar reward`);
      }
      if (out.shard) {
        console.log(
          `shard: ${out.shard.key ?? "(no Parquet: no traces)"} and ${out.shard.jsonlKey}, ${out.shard.rows} rows`,
        );
      } else {
        console.log(
          `shard: not written yet, fewer than ${out.numSamples} sessions (num_samples) have results`,
        );
      }
      return out.results.some((r) => r.status === "ERROR") ? 1 : 0;
    } catch (err) {
      if (err instanceof TaskFileError || err instanceof ShardInputError) {
        console.error(`polar reconstruct: ${err.message}`);
        return 1;
      }
      throw err;
    }
  },
};
export default command;

function parse(argv: string[]) {
  return parseFlags({
    args: argv,
    options: { task: { type: "string" }, session: { type: "string" }, store: { type: "string" } },
    allowPositionals: false,
    strict: true,
  });
}

/** ", breaks: compaction 1, retry 2" (none: empty). */
function breakReasons(counts: Record<string, number>): string {
  const parts = Object.entries(counts).map(([reason, n]) => `${reason} ${n}`);
  return parts.length > 0 ? `, breaks: ${parts.join(", ")}` : "";
}
