import { join } from "node:path";
import {
  EMBEDDED_RUNNER_DEFAULTS,
  postrunSlots,
  RUNNER_DEFAULTS,
} from "../../batch-runner/runner-defaults.ts";
import { type Command, UsageError } from "../command.ts";
import { RunSetupError, runEmbedded } from "../embedded.ts";
import { engineFlag, intFlag, parseFlags, serviceEnvFlag, upstreamFlag } from "../flags.ts";
import { summaryTable } from "../task-summary.ts";
import { readTasksFile } from "../tasks-file.ts";

const usage = `Usage: polar run TASKS.jsonl [--upstream URL] [--engine vllm|sglang] [--out DIR]
                 [--run N] [--init N] [--ready N] [--postrun N] [--max-receives N] [--skip-invalid]
                 [--docker-bin docker|podman] [--allow-verifier-network]
                 [--service-env NAME[,NAME...]]

Everything in one process: the proxy (token auth, random signing key), a batch runner, an in-memory
queue and a directory store under DIR (the store is DIR/store). Without --upstream the dry-run
policy is started, so this runs without a GPU. TASKS.jsonl holds one TaskRequest per line (fields,
defaults and examples: docs/tasks.md); the whole file is checked before anything runs.

  --upstream URL     an inference server (vLLM/SGLang) root, e.g. http://127.0.0.1:8000; checked
                     before anything starts (GET /v1/models), exit 1 if it does not answer
  --engine           vllm (default) or sglang: which token flags the proxy sends and reads
  --out DIR          output directory (default .polar/run)
  --run N            concurrent harness runs (default ${RUNNER_DEFAULTS.run})
  --init N           sessions being prepared at once (default: --run)
  --ready N          prepared sessions waiting for a run slot (default: --run)
  --postrun N        sessions being reconstructed/evaluated at once (default: half of --run)
  --max-receives N   attempts per session before it is recorded as ERROR (default ${EMBEDDED_RUNNER_DEFAULTS.maxReceives};
                     \`polar runner\` defaults to ${RUNNER_DEFAULTS.maxReceives}: a one-process run gives up sooner)
  --skip-invalid     run the valid lines of TASKS.jsonl and report the bad ones
  --docker-bin BIN   the engine for tasks with runtime.backend docker (default: docker when its
                     daemon answers, else podman when it runs; docs/runner.md, "Runtimes")
  --allow-verifier-network
                     a Harbor task's verifier gets the engine's network when its task asks
                     (runtime.judge_network); the agent never has one (as \`polar runner\`)
  --service-env NAME[,NAME...]
                     variables of this process's environment a task's side services may take;
                     never the agent's; one not listed ends its session ERROR at INIT (as \`polar runner\`)

Prints progress (with each failed session's reason), then a table per task: sessions by status,
mean reward and the shard (DIR/store/trajectories/{task_id}.parquet). Exit status: 0 when every
session ended COMPLETED or TIMEOUT, 1 when any ended in ERROR (or the run could not start),
2 for bad flags, 130 when stopped by Ctrl-C (one Ctrl-C stops the running harnesses; a second
exits at once). Running the same file again reruns only sessions without a result.
See docs/runner.md.`;

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
        "docker-bin": { type: "string" },
        "allow-verifier-network": { type: "boolean" },
        "service-env": { type: "string", multiple: true },
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("expects exactly one TASKS.jsonl file");
    const upstream = upstreamFlag(values.upstream);
    const engine = engineFlag(values.engine);
    const run = intFlag("run", values.run, RUNNER_DEFAULTS.run, 1, 1024);
    const init = intFlag("init", values.init, run, 1, 1024);
    const ready = intFlag("ready", values.ready, run, 0, 1024);
    const postrun = intFlag("postrun", values.postrun, postrunSlots(run), 1, 1024);
    const maxReceives = intFlag(
      "max-receives",
      values["max-receives"],
      EMBEDDED_RUNNER_DEFAULTS.maxReceives,
      1,
      100,
    );
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
    let result: Awaited<ReturnType<typeof runEmbedded>>;
    try {
      result = await runEmbedded({
        signal: stop.signal,
        tasks,
        outDir: values.out,
        upstream,
        engine,
        run,
        init,
        ready,
        postrun,
        maxReceives,
        dockerBin: values["docker-bin"],
        allowVerifierNetwork: values["allow-verifier-network"] === true,
        serviceEnv: serviceEnvFlag(values["service-env"]),
      });
    } catch (err) {
      if (err instanceof RunSetupError) {
        console.error(`polar run: ${err.message}`);
        return 1;
      }
      throw err;
    } finally {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    }
    const by = Object.entries(result.statuses)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ");
    console.log(`done: ${result.sessions} session(s)${by ? ` (${by})` : ""}; store ${result.storeDir}`);
    console.log(summaryTable(result.tasks, (key) => join(result.storeDir, key)));
    const errors = result.tasks.flatMap((t) => t.errors);
    if (errors.length) {
      console.log(`\n${errors.length} session(s) ended in ERROR:`);
      for (const e of errors) console.log(`  ${e.session_id}: ${e.error.split("\n", 1)[0]}`);
      console.log(
        "  (the full reason is each result's `error`, the harness's output its artifacts harness/stdout.txt and stderr.txt:\n" +
          `   ${join(result.storeDir, "results")}/TASK/SESSION.json, ${join(result.storeDir, "artifacts")}/TASK/SESSION/ATTEMPT/harness/)`,
      );
    }
    if (!result.finished) {
      console.log("stopped early: run the same command again to finish the remaining sessions");
      return 130;
    }
    return errors.length ? 1 : 0;
  },
};

export default command;
