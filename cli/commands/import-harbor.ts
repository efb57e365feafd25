import { lstat, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { HarborTaskRefused } from "../../batch-runner/harbor/harbor-refusal.ts";
import { importHarborTask, JOB_FILES } from "../../batch-runner/harbor/import-task.ts";
import { validateTask } from "../../shared/tasks/validate-task.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags } from "../flags.ts";

const usage = `Usage: polar import-harbor DIR... --harness NAME [--settings JSON] [--model NAME] [--samples N] [--no-build] > tasks.jsonl
       polar import-harbor --dry-run DIR... [--no-build]

Turns Harbor task directories (the Terminal-Bench 2.0 layout) into TaskRequests, one JSON line
per task on stdout, each with the \`harbor\` evaluator: after the agent stops, the task's tests/
run in a fresh runtime holding the agent's work dir, and the reward.json / reward.txt they write
under /logs/verifier is the reward (docs/tasks.md, "Harbor tasks"). A DIR without task.toml whose
subdirectories hold one is a collection: each subdirectory is a task.

Read: instruction.md; task.toml (timeouts, limits, env, \`version\` as \`schema_version\`; read
with python3's tomllib, 3.11+, run isolated from / so nothing of the collection or the cwd is
imported or run); environment/ (its Dockerfile and build context: the task gets runtime.backend
docker and runtime.image build:<environment dir>, which the runner builds with its container
engine, docs/runner.md, within environment.build_timeout_sec; or environment.docker_image, run as
it is); tests/ (test.sh required, text files); steps/ with task.toml's [[steps]] (one session runs
the harness once per step, each step judged after it); environment.skills_dir (copied into the
harness's skills dir at INIT); environment.mcp_servers (agent.mcp_servers); artifacts (work-dir
paths kept with the session's outputs). The image's WORKDIR, /tests and /logs are rewritten to the
runtime's real dirs. A task using anything else (tests/Dockerfile, a network allowlist, an artifact
outside the WORKDIR, a symlink anywhere in the task) is refused with the file and the reason on
stderr, and the command exits 1 after writing the tasks it could convert. A job's config.yaml or
metrics/ beside a task is not read (a warning). Harbor's default network ("public") is converted
with a warning when the tests download their tools: the sandbox has no internet.

  DIR...            Harbor task directories (the directory name is the task_id) or collections
  --harness NAME    agent.harness of every task (claude_code, codex, shell, ...)
  --settings JSON   agent.settings (e.g. '{"command": "..."}' for the shell harness)
  --model NAME      agent.model (default: policy)
  --samples N       num_samples (default 1)
  --no-build        build no image: the task runs in the runner's own runtime (bwrap by default),
                    so only a Dockerfile of FROM, WORKDIR, ENV, LABEL and ARG is accepted
  --dry-run         write no tasks: print each task imported or refused, and the count by reason
                    (checked against --harness, default claude_code)`;

/** A DIR of task dirs (a Harbor dataset or the cookbook's recipes/) -> them; a task dir -> itself. */
async function expand(dir: string): Promise<string[]> {
  if (await exists(join(dir, "task.toml"))) return [dir];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  // A job's own dirs beside its tasks (metrics/) are not tasks.
  const subdirs = entries
    .filter((e) => e.isDirectory() && !e.name.startsWith(".") && !JOB_FILES.has(e.name))
    .map((e) => join(dir, e.name));
  const tasks: string[] = [];
  for (const sub of subdirs) if (await exists(join(sub, "task.toml"))) tasks.push(sub);
  // Not a collection: refused as a task, naming the missing task.toml.
  return tasks.length > 0 ? subdirs.sort() : [dir];
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}

/** A refusal without its specifics (line numbers, values), so tasks refused alike count together. */
function reasonOf(message: string): string {
  return message.replace(/^([^:\s]+):\d+:/, "$1:").replace(/^(task\.toml: [\w.]+) = .*: ([^:]+)$/, "$1: $2");
}

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
        "no-build": { type: "boolean" },
        "dry-run": { type: "boolean" },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length === 0) throw new UsageError("expected at least one Harbor task DIR");
    const dryRun = values["dry-run"] === true;
    if (values.harness === undefined && !dryRun)
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
    // A dry run writes no task: without --harness it checks against claude_code, a preset that takes
    // MCP servers and skills, so the census counts what some harness can run.
    const agent = {
      harness: values.harness ?? "claude_code",
      settings,
      ...(values.model ? { model: values.model } : {}),
    };
    const dirs = (await Promise.all(positionals.map(expand))).flat();
    const refusals = new Map<string, string[]>();
    for (const dir of dirs) {
      let task: Record<string, unknown>;
      try {
        const imported = await importHarborTask(dir, {
          agent,
          numSamples: samples,
          noBuild: values["no-build"] === true,
        });
        task = imported.task;
        for (const w of imported.warnings) console.error(`polar import-harbor: ${dir}: warning: ${w}`);
      } catch (err) {
        if (!(err instanceof HarborTaskRefused)) throw err;
        console.error(`polar import-harbor: ${dir}: refused: ${err.message}`);
        refusals.set(reasonOf(err.message), [...(refusals.get(reasonOf(err.message)) ?? []), dir]);
        continue;
      }
      // The same check polar run/submit apply: a line this writes is a line they accept.
      const check = validateTask(task);
      if (!check.ok) {
        const why = check.problems.join("; ");
        console.error(`polar import-harbor: ${dir}: ${why}`);
        refusals.set(why, [...(refusals.get(why) ?? []), dir]);
        continue;
      }
      if (dryRun) console.log(`imported  ${dir}`);
      else process.stdout.write(`${JSON.stringify(task)}\n`);
    }
    const refused = [...refusals.values()].flat().length;
    if (dryRun) {
      for (const [reason, where] of [...refusals].sort((a, b) => b[1].length - a[1].length))
        console.log(
          `refused   ${where.length}  ${reason}\n          ${where.map((d) => basename(d)).join(", ")}`,
        );
      console.log(`${dirs.length - refused} of ${dirs.length} tasks import`);
    }
    console.error(`polar import-harbor: ${dirs.length - refused} of ${dirs.length} tasks converted`);
    return refused > 0 ? 1 : 0;
  },
};

export default command;
