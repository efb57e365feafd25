import { runEmbedded } from "../../embedded.ts";
import { intFlag } from "../../runner-flags.ts";
import { type Command, UsageError } from "../command.ts";
import { engineFlag, parseFlags, upstreamFlag } from "../flags.ts";
import { readTasksFile } from "../tasks-file.ts";

const usage = `Usage: polar run TASKS.jsonl [--upstream URL] [--engine vllm|sglang] [--out DIR]
                 [--run N] [--init N] [--ready N] [--postrun N] [--max-receives N] [--skip-invalid]

Everything in one process: the proxy (token auth, random signing key), a batch runner, an in-memory
queue and a directory store under DIR (default .polar/run; the store is DIR/store). Without
--upstream the dry-run policy is started, so this runs without a GPU. Shows progress and prints
where the trajectory shards are (DIR/store/trajectories/{task_id}.parquet).

Running the same file again reruns only sessions without a result. See docs/runner.md.`;

const command: Command = {
  summary: "run TaskRequests end to end in one process (proxy + runner + store)",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        upstream: { type: "string" },
        engine: { type: "string" },
        out: { type: "string" },
        run: { type: "string" },
        init: { type: "string" },
        ready: { type: "string" },
        postrun: { type: "string" },
        "max-receives": { type: "string" },
        "skip-invalid": { type: "boolean" },
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("expects exactly one TASKS.jsonl file");
    const upstream = upstreamFlag(values.upstream);
    const engine = engineFlag(values.engine);
    const run = intFlag("run", values.run, 4, 1, 1024);
    const parsed = await readTasksFile(
      "run",
      positionals[0],
      values["skip-invalid"] === true,
      "nothing run (use --skip-invalid to run the rest)",
    );
    if (!parsed) return 1;
    const { tasks } = parsed;
    // Harnesses run in their own process groups, so a Ctrl-C would not reach them: stop them here.
    const stop = new AbortController();
    const onSignal = (sig: string) => {
      if (stop.signal.aborted) process.exit(130);
      console.error(`\npolar run: ${sig}: stopping the running sessions (again to exit at once)`);
      stop.abort();
    };
    const onInt = () => onSignal("SIGINT");
    const onTerm = () => onSignal("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    const result = await runEmbedded({
      signal: stop.signal,
      tasks,
      outDir: values.out,
      upstream,
      engine,
      run,
      init: intFlag("init", values.init, run, 1, 1024),
      ready: intFlag("ready", values.ready, run, 0, 1024),
      postrun: intFlag("postrun", values.postrun, Math.max(1, Math.ceil(run / 2)), 1, 1024),
      maxReceives: intFlag("max-receives", values["max-receives"], 3, 1, 100),
    });
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
    const by = Object.entries(result.statuses)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ");
    console.log(`done: ${result.sessions} session(s)${by ? ` (${by})` : ""}; store ${result.storeDir}`);
    for (const [task, path] of Object.entries(result.shards)) {
      console.log(`  ${task}: ${path ?? "no shard (not every session finished)"}`);
    }
    if (!result.finished) {
      console.log("stopped early: run the same command again to finish the remaining sessions");
      return 130;
    }
    return 0;
  },
};

export default command;
