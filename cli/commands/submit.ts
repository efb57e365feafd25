import { openQueue } from "../../batch-runner/queue/open-queue.ts";
import { submitTasks } from "../../batch-runner/submit.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, queueFlag, storeFlag } from "../flags.ts";
import { readTasksFile } from "../tasks-file.ts";

const usage = `Usage: polar submit TASKS.jsonl --queue memory|SQS_URL --store DIR|s3://bucket/prefix [--skip-invalid]

Validates every TaskRequest in TASKS.jsonl (one JSON object per line; every field, its default
and an example: docs/tasks.md, JSON Schema docs/task-request.schema.json), writes
tasks/{task_id}.json to the store and enqueues num_samples SessionJobs per task (10 per SQS
SendMessageBatch). Validation is strict: an unknown field is named with the likely one ("did you
mean"), and evaluator.config and agent.settings are checked against the evaluator's and the
harness's own schemas. A file with any invalid line enqueues nothing unless --skip-invalid.

Session ids are deterministic ({task_id}-{sample_index}): submitting the same file again enqueues
only the sessions that have no result yet, and a task_id already stored with a different request
is refused.

  --queue          an SQS queue URL (credentials and AWS_ENDPOINT_URL_SQS from the environment);
                   "memory" only lives as long as this process (use \`polar run\` for one-process runs)
  --store          where tasks/, captures/ and results/ live: a directory or s3://bucket/prefix
  --skip-invalid   enqueue the valid lines and report the bad ones`;

const command: Command = {
  summary: "validate TaskRequests and enqueue their sessions",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        queue: { type: "string" },
        store: { type: "string" },
        "skip-invalid": { type: "boolean" },
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("expects exactly one TASKS.jsonl file");
    const queueSpec = queueFlag("queue", values.queue, true) as string;
    const storeSpec = values.store;
    if (!storeSpec) throw new UsageError("--store is required (a directory or s3://bucket/prefix)");
    const parsed = await readTasksFile(
      "submit",
      positionals[0],
      values["skip-invalid"] === true,
      "nothing enqueued (use --skip-invalid to enqueue the rest)",
    );
    if (!parsed) return 1;
    const { tasks, errors } = parsed;
    if (queueSpec === "memory") {
      console.error(
        "polar submit: note: a memory queue ends with this process; use `polar run` to run in one process",
      );
    }
    const store = await storeFlag(storeSpec);
    const queue = openQueue(queueSpec);
    try {
      const out = await submitTasks(store, queue, tasks);
      console.log(
        `submitted ${out.tasks} task(s): ${out.enqueued} session(s) enqueued to ${queue.url}` +
          (out.skipped ? `, ${out.skipped} already had a result` : "") +
          (errors.length ? `; skipped ${errors.length} invalid line(s)` : ""),
      );
      return 0;
    } finally {
      await queue.close();
    }
  },
};

export default command;
