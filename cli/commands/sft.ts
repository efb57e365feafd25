import { join, resolve } from "node:path";
import { AcceptExpressionError, parseAcceptExpression } from "../../sft/accept-expression.ts";
import { ACCEPT_NAMES } from "../../sft/sft-run.ts";
import { type Command, UsageError } from "../command.ts";
import { engineFlag, intFlag, parseFlags, storeFlag, upstreamFlag } from "../flags.ts";
import { readTasksFile } from "../tasks-file.ts";

const usage = `Usage: polar sft TASKS.jsonl --accept EXPR --out DIR|s3://bucket/prefix
                 [--work DIR] [--upstream URL] [--engine vllm|sglang] [--run N] [--skip-invalid]

Offline SFT generation: runs the tasks' rollouts as \`polar run\` does (the dry-run policy when no
--upstream is given; rollouts and their store under --work, default OUT/rollouts, or
.polar/sft-rollouts when OUT is s3://), then keeps the sessions for which EXPR holds and writes:
  OUT/chat.jsonl    per trainable trace of an accepted session: the last model call's messages and
                    tools exactly as the harness sent them, plus the answer it got, in its provider's
                    format (see docs/evaluation-and-sft.md)
  OUT/tokens.jsonl  the same traces in token form: prompt_ids, response_ids, loss_mask, logprobs
  OUT/stats.json    acceptance: accepted / attempted overall and by task
Prints a progress bar and the acceptance stats. Rerunning with the same --work resumes.
TASKS.jsonl is checked as by \`polar run\` (fields: docs/tasks.md).

EXPR: comparisons (== != >= <= > <) of ${ACCEPT_NAMES.join(", ")}
(evaluation.NAME reads the evaluator's metadata), joined with && || ! (or and/or/not), parentheses,
numbers, "strings", true/false/null. Example: --accept 'reward >= 1 && status == "COMPLETED"'`;

const command: Command = {
  summary: "offline SFT generation with acceptance filtering",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        accept: { type: "string" },
        out: { type: "string" },
        work: { type: "string" },
        upstream: { type: "string" },
        engine: { type: "string" },
        run: { type: "string" },
        "skip-invalid": { type: "boolean" },
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("expects exactly one TASKS.jsonl file");
    const accept = values.accept;
    if (!accept) throw new UsageError("--accept EXPR is required (e.g. --accept 'reward >= 1')");
    try {
      parseAcceptExpression(accept, ACCEPT_NAMES);
    } catch (err) {
      if (err instanceof AcceptExpressionError) throw new UsageError(`--accept: ${err.message}`);
      throw err;
    }
    const out = values.out;
    if (!out) throw new UsageError("--out DIR|s3://bucket/prefix is required");
    await storeFlag(out, "out"); // a bad spec is a usage error now, not after the rollouts
    const upstream = upstreamFlag(values.upstream);
    const engine = engineFlag(values.engine);
    const run = intFlag("run", values.run, 4, 1, 1024);
    const work =
      values.work ??
      (/^s3:\/\//.test(out) ? ".polar/sft-rollouts" : join(out.replace(/^file:\/\//, ""), "rollouts"));

    const parsed = await readTasksFile(
      "sft",
      positionals[0],
      values["skip-invalid"] === true,
      "nothing run (use --skip-invalid to run the rest)",
    );
    if (!parsed) return 1;
    const { tasks } = parsed;
    // Loaded here so `polar sft --help` stays light.
    const [{ runSft }, { runEmbedded }] = await Promise.all([
      import("../../sft/sft-run.ts"),
      import("../embedded.ts"),
    ]);
    const workDir = resolve(work);
    const stats = await runSft({
      tasks,
      accept,
      out,
      workDir,
      runRollouts: (onResult) =>
        runEmbedded({
          tasks,
          outDir: workDir,
          upstream,
          engine,
          run,
          progressOut: null,
          onResult,
          log: () => {},
        }),
    });
    const pct = (a: number, n: number) => (n ? `${((a / n) * 100).toFixed(1)}%` : "-");
    console.log(
      `accepted ${stats.accepted} / ${stats.attempted} sessions (${pct(stats.accepted, stats.attempted)}) for ${accept}`,
    );
    for (const [task, s] of Object.entries(stats.by_task)) {
      console.log(`  ${task}: ${s.accepted}/${s.attempted} (${pct(s.accepted, s.attempted)})`);
    }
    console.log(`wrote ${stats.chat_records} chat and ${stats.token_records} token records to ${stats.out}`);
    for (const u of stats.chat_unavailable) {
      console.error(`  no chat form for ${u.session_id} trace ${u.trace_index}: ${u.reason}`);
    }
    return 0;
  },
};

export default command;
