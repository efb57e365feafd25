import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { runEmbedded } from "../../embedded.ts";
import { intFlag } from "../../runner-flags.ts";
import { parseTasksJsonl } from "../../submit.ts";
import { type Command, UsageError } from "../command.ts";

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
    let values: Record<string, string | boolean | undefined>;
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
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
      }));
    } catch (err) {
      throw new UsageError(err instanceof Error ? err.message : String(err));
    }
    if (positionals.length !== 1) throw new UsageError("expects exactly one TASKS.jsonl file");
    const upstream = values.upstream as string | undefined;
    if (upstream !== undefined && !/^https?:\/\/[^/]/.test(upstream)) {
      throw new UsageError(`--upstream must be an http(s) URL, got ${JSON.stringify(upstream)}`);
    }
    const engine = (values.engine as string | undefined) ?? "vllm";
    if (engine !== "vllm" && engine !== "sglang")
      throw new UsageError(`--engine must be vllm or sglang, got ${engine}`);
    const str = (k: string) => values[k] as string | undefined;
    const run = intFlag("run", str("run"), 4, 1, 1024);
    const file = positionals[0];
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      console.error(`polar run: cannot read ${file}: ${(err as Error).message}`);
      return 1;
    }
    const { tasks, errors } = parseTasksJsonl(text);
    for (const e of errors) console.error(`${file}:${e.line}: ${e.message}`);
    if (errors.length > 0 && !values["skip-invalid"]) {
      console.error(
        `polar run: ${errors.length} invalid line(s); nothing run (use --skip-invalid to run the rest)`,
      );
      return 1;
    }
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
      outDir: str("out"),
      upstream,
      engine,
      run,
      init: intFlag("init", str("init"), run, 1, 1024),
      ready: intFlag("ready", str("ready"), run, 0, 1024),
      postrun: intFlag("postrun", str("postrun"), Math.max(1, Math.ceil(run / 2)), 1, 1024),
      maxReceives: intFlag("max-receives", str("max-receives"), 3, 1, 100),
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
