import { HarborTaskRefused } from "../../batch-runner/harbor/harbor-refusal.ts";
import { importHarborTask } from "../../batch-runner/harbor/import-task.ts";
import { validateTask } from "../../shared/tasks/validate-task.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags } from "../flags.ts";

const usage = `Usage: polar import-harbor DIR... --harness NAME [--settings JSON] [--model NAME] [--samples N] > tasks.jsonl

Turns Harbor task directories (the Terminal-Bench 2.0 layout) into TaskRequests, one JSON line
per task on stdout, each with the \`harbor\` evaluator: after the agent stops, the task's tests/
run in a fresh runtime holding the agent's work dir, and the reward.json / reward.txt they write
under /logs/verifier is the reward (docs/tasks.md, "Harbor tasks").

Read: instruction.md; task.toml (timeouts, limits, env; read with python3's tomllib, 3.11+, run
isolated from / so nothing of the collection or the cwd is imported or run);
environment/Dockerfile, which must not need building: FROM, WORKDIR, ENV, LABEL and ARG only
(no image is built: the task runs in the runner's own runtime); tests/ (test.sh required, text
files). The image's WORKDIR, /tests and /logs are rewritten to the runtime's real dirs. A task
using anything else (RUN or COPY in the Dockerfile, docker-compose, tests/Dockerfile, steps, MCP
servers, a network allowlist, a symlink anywhere in the task) is refused with the file and the
reason on stderr, and the command exits 1 after writing the tasks it could convert. Harbor's
default network_mode "public" is converted with a warning: the sandbox has no internet, so a
test.sh that downloads its tools fails there.

  DIR...            Harbor task directories (the directory name is the task_id)
  --harness NAME    agent.harness of every task (claude_code, codex, shell, ...)
  --settings JSON   agent.settings (e.g. '{"command": "..."}' for the shell harness)
  --model NAME      agent.model (default: policy)
  --samples N       num_samples (default 1)`;

const command: Command = {
  summary: "turn Harbor task directories (Terminal-Bench 2.0) into a tasks.jsonl",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        harness: { type: "string" },
        settings: { type: "string" },
        model: { type: "string" },
        samples: { type: "string" },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length === 0) throw new UsageError("expected at least one Harbor task DIR");
    if (values.harness === undefined)
      throw new UsageError("--harness is required (the agent that runs every task)");
    let settings: unknown = {};
    if (values.settings !== undefined) {
      try {
        settings = JSON.parse(values.settings);
      } catch (err) {
        throw new UsageError(`--settings is not JSON: ${(err as Error).message}`);
      }
    }
    const samples = values.samples === undefined ? undefined : Number(values.samples);
    if (samples !== undefined && !(Number.isInteger(samples) && samples >= 1)) {
      throw new UsageError(`--samples must be a positive integer, got ${JSON.stringify(values.samples)}`);
    }
    const agent = { harness: values.harness, settings, ...(values.model ? { model: values.model } : {}) };
    let refused = 0;
    for (const dir of positionals) {
      let task: Record<string, unknown>;
      try {
        const imported = await importHarborTask(dir, { agent, numSamples: samples });
        task = imported.task;
        for (const w of imported.warnings) console.error(`polar import-harbor: ${dir}: warning: ${w}`);
      } catch (err) {
        if (!(err instanceof HarborTaskRefused)) throw err;
        console.error(`polar import-harbor: ${dir}: refused: ${err.message}`);
        refused++;
        continue;
      }
      // The same check polar run/submit apply: a line this writes is a line they accept.
      const check = validateTask(task);
      if (!check.ok) {
        console.error(`polar import-harbor: ${dir}: ${check.problems.join("; ")}`);
        refused++;
        continue;
      }
      process.stdout.write(`${JSON.stringify(task)}\n`);
    }
    console.error(
      `polar import-harbor: ${positionals.length - refused} of ${positionals.length} tasks converted`,
    );
    return refused > 0 ? 1 : 0;
  },
};

export default command;
