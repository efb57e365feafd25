import { readdir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { isValidId } from "../../shared/ids.ts";
import { RUNNER_CONFIG_FILES } from "../../shared/schemas/task-settings.ts";
import { buildContextOf, buildRef, PREBUILT_PREFIX, prebuiltImageOf } from "../runtime/image-build-ref.ts";
import { artifactPaths } from "./artifacts.ts";
import { composeServicesField, serviceEnvWarnings } from "./compose.ts";
import { readDockerfile } from "./dockerfile.ts";
import { rewritePaths } from "./harbor-paths.ts";
import { HarborTaskRefused } from "./harbor-refusal.ts";
import { mcpServersOf } from "./mcp.ts";
import { globsNamedIn } from "./path-globs.ts";
import { skillsPrepare } from "./skills.ts";
import { checkTaskDir, entryKind, listTaskFiles, readTaskFile, refuseLink } from "./task-files.ts";
import { readSteps, stepsBudget } from "./task-steps.ts";
import { checkTaskToml, networkWarnings, parseToml } from "./task-toml.ts";
import { judgeRuntimeFields, verifierWarnings } from "./verifier-phase.ts";

/**
 * One Harbor task directory (the Terminal-Bench 2.0 layout) -> a TaskRequest with the `harbor`
 * evaluator. Supported: `instruction.md`, `task.toml` (task-toml.ts), `environment/` (its
 * Dockerfile and build context, built on the runner as Harbor builds it: the task gets
 * `runtime.backend` docker and `runtime.image` `build:<environment dir>`, image-build.ts; or
 * `environment.docker_image`, run as it is), `tests/` with `test.sh` (text files, inlined into the
 * evaluator config), and `solution/` (never shown to the agent; recorded in metadata only).
 * Anything else is refused with the reason, never skipped, and so is a symlink anywhere in the task
 * (task-files.ts).
 */
export interface ImportOptions {
  agent: Record<string, unknown>;
  numSamples?: number;
  /** Build nothing: the task runs in the runner's own runtime (dockerfile.ts lists what that allows). */
  noBuild?: boolean;
}

/** Top-level entries a task may hold beside the ones read; README and ignore files carry no behaviour. */
const INERT = new Set(["README.md", ".gitignore", ".dockerignore"]);
/** What a Harbor job keeps beside its tasks (`harbor run -c config.yaml`, its metric scripts): not the task's. */
export const JOB_FILES = new Set(["config.yaml", "metrics"]);
/** The build-context files that are not the image's: side services are not started. */
const COMPOSE = /(^|\/)(docker-)?compose\.ya?ml$/;
const READ = new Set(["instruction.md", "task.toml", "environment", "tests", "solution", "steps"]);
/** Tests are inlined into the task; a bigger tests/ belongs on the runner's host (`files[...].from`). */
const MAX_TESTS_BYTES = 1024 * 1024;

async function textFile(dir: string, rel: string): Promise<string> {
  const bytes = await readTaskFile(dir, rel);
  if (bytes === null) {
    throw new HarborTaskRefused(
      `${rel}: missing (a Harbor task holds instruction.md, task.toml, environment/Dockerfile and tests/test.sh)`,
    );
  }
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  try {
    return text.decode(bytes);
  } catch {
    throw new HarborTaskRefused(`${rel}: not UTF-8 text (only text files can be inlined into the task)`);
  }
}

export interface ImportedTask {
  task: Record<string, unknown>;
  /** What the task asked for that the sandbox does not give (converted anyway): for stderr. */
  warnings: string[];
}

export async function importHarborTask(dir: string, opts: ImportOptions): Promise<ImportedTask> {
  const taskId = basename(dir.replace(/\/+$/, ""));
  await checkTaskDir(dir);
  // What makes a directory a task: without it nothing else is worth naming.
  if ((await entryKind(dir, "task.toml")) !== "file")
    throw new HarborTaskRefused(
      "task.toml: missing (not a Harbor task directory: a task holds task.toml, instruction.md, environment/ and tests/test.sh)",
    );
  if (!isValidId(taskId))
    throw new HarborTaskRefused(`the directory name ${JSON.stringify(taskId)} is not a valid task_id`);
  const warnings: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isSymbolicLink()) refuseLink(entry.name);
    if (READ.has(entry.name) || INERT.has(entry.name)) continue;
    if (JOB_FILES.has(entry.name)) {
      warnings.push(`${entry.name}: a Harbor job's file beside the task, not read`);
      continue;
    }
    const why =
      entry.name === "trajectory.json"
        ? "prior agent context (an ATIF trajectory seeded before the agent runs) is not supported"
        : "not part of the Harbor task layout Polar reads";
    throw new HarborTaskRefused(`${entry.name}: ${why}`);
  }
  const toml = checkTaskToml(parseToml(await textFile(dir, "task.toml"), dir));
  const multiStep = (toml.steps?.length ?? 0) > 0;
  if (!multiStep && (await entryKind(dir, "steps")) !== null)
    throw new HarborTaskRefused(
      "steps: task.toml declares no [[steps]], so Harbor would not run these steps",
    );
  // A multi-step task's instructions are its steps'; a top-level one is not read (as in Harbor).
  const instruction = multiStep ? "" : await textFile(dir, "instruction.md");
  if (!multiStep && instruction.trim() === "")
    throw new HarborTaskRefused("instruction.md: empty (the agent would get no task)");
  const prebuilt = toml.environment?.docker_image ?? null;
  // `prebuilt:build:/etc` would reach the runtime as a build reference of any host dir.
  if (prebuilt !== null && (buildContextOf(prebuilt) !== null || prebuiltImageOf(prebuilt) !== null))
    throw new HarborTaskRefused(
      `task.toml: environment.docker_image ${JSON.stringify(prebuilt)} is one of Polar's build references, not an image`,
    );
  const build = !opts.noBuild && prebuilt === null;
  const hasDockerfile = (await entryKind(dir, "environment/Dockerfile")) === "file";
  const docker =
    prebuilt !== null && !hasDockerfile
      ? { from: prebuilt, workdir: null, env: {}, bases: [] }
      : // With a prebuilt image the Dockerfile is its recipe, read only for the WORKDIR.
        readDockerfile(await textFile(dir, "environment/Dockerfile"), undefined, {
          build: build || prebuilt !== null,
          builtByRunner: build,
        });
  for (const file of await listTaskFiles(dir, "environment")) {
    if (file === "Dockerfile") continue;
    if (COMPOSE.test(file) && file !== "docker-compose.yaml")
      throw new HarborTaskRefused(
        `environment/${file}: only environment/docker-compose.yaml is read for side services (compose.ts)`,
      );
    if (opts.noBuild && prebuilt === null)
      throw new HarborTaskRefused(
        `environment/${file}: --no-build builds no image, so this build-context file would never reach the task`,
      );
  }
  const skills = toml.environment?.skills_dir
    ? skillsPrepare(String(opts.agent.harness), toml.environment.skills_dir)
    : { prepare: null, warning: null };
  if (skills.warning) warnings.push(skills.warning);
  const testFiles = await listTaskFiles(dir, "tests");
  if (!testFiles.includes("test.sh") && !multiStep) {
    throw new HarborTaskRefused(
      testFiles.includes("test.bat")
        ? "tests/test.bat: Windows tasks are not supported"
        : "tests/test.sh: missing",
    );
  }
  if (testFiles.includes("Dockerfile")) {
    throw new HarborTaskRefused(
      "tests/Dockerfile: a separate verifier image is not built (the tests run in a fresh runtime built like the agent's)",
    );
  }
  const tests: Record<string, string> = {};
  let bytes = 0;
  for (const file of testFiles) {
    tests[file] = await textFile(dir, join("tests", file));
    bytes += Buffer.byteLength(tests[file]);
  }
  if (bytes > MAX_TESTS_BYTES)
    throw new HarborTaskRefused(
      `tests/: ${bytes} bytes, more than the ${MAX_TESTS_BYTES} that can be inlined into a task`,
    );

  const workdir = (toml.environment?.workdir ?? docker.workdir)?.replace(/\/+$/, "");
  if (!workdir)
    throw new HarborTaskRefused(
      prebuilt !== null && !hasDockerfile
        ? "task.toml: environment.docker_image without environment.workdir or an environment/Dockerfile naming its WORKDIR (the agent's work dir stands in for it, so the task must name it)"
        : "environment/Dockerfile: no WORKDIR (the agent's work dir stands in for it, so the task must name it)",
    );
  const stepped = multiStep ? await readSteps(dir, toml, workdir, (rel) => textFile(dir, rel)) : null;
  warnings.push(...(stepped?.warnings ?? []));
  for (const step of stepped?.steps ?? [])
    if (!testFiles.includes("test.sh") && !Object.hasOwn(step.tests, "test.sh"))
      throw new HarborTaskRefused(`steps/${step.name}/tests/test.sh: missing (and tests/ holds no test.sh)`);
  const artifacts = artifactPaths(toml.artifacts ?? [], workdir);
  warnings.push(...artifacts.warnings);
  // The agent works in its work dir: instruction paths under WORKDIR become relative ones.
  const localInstruction =
    stepped?.steps[0]?.instruction ?? rewritePaths(instruction, { [workdir]: "." }).trim();
  const hasSolution = (await entryKind(dir, "solution")) === "dir";
  warnings.push(...networkWarnings(toml, Object.values(tests)));
  warnings.push(
    ...verifierWarnings(toml, (await entryKind(dir, "environment/docker-compose.yaml")) === "file"),
  );
  const inImage = build || prebuilt !== null;
  const composed = inImage ? await composeServicesField(resolve(dir)) : {};
  warnings.push(...serviceEnvWarnings(composed.services ?? []));
  // Runner config the task asks for or its tests read is the agent's deliverable: let it reach the judge.
  const stepTexts = (stepped?.steps ?? []).flatMap((s) => [s.instruction, ...Object.values(s.tests)]);
  const named = globsNamedIn(
    RUNNER_CONFIG_FILES,
    [localInstruction, ...Object.values(tests), ...stepTexts].join("\n"),
  );
  for (const glob of named)
    warnings.push(
      `${glob}: named by the instruction or the tests, so the agent's file reaches the tests (outputs_denied lets it through)`,
    );
  const task = {
    task_id: taskId,
    instruction: localInstruction,
    ...(opts.numSamples ? { num_samples: opts.numSamples } : {}),
    ...(stepped
      ? stepsBudget(stepped.steps, toml)
      : toml.agent?.timeout_sec
        ? { timeout_seconds: toml.agent.timeout_sec }
        : {}),
    agent: {
      ...opts.agent,
      ...(toml.environment?.mcp_servers?.length
        ? { mcp_servers: mcpServersOf(toml.environment.mcp_servers) }
        : {}),
    },
    ...(artifacts.paths.length ? { artifacts: artifacts.paths } : {}),
    runtime: {
      ...(prebuilt !== null
        ? { backend: "docker", image: `${PREBUILT_PREFIX}${prebuilt}` }
        : build
          ? {
              backend: "docker",
              image: buildRef(resolve(dir, "environment"), toml.environment?.build_timeout_sec),
            }
          : {}),
      ...composed,
      ...(inImage ? judgeRuntimeFields(toml) : {}),
      ...(skills.prepare ? { prepare: [skills.prepare] } : {}),
      env: { ...docker.env, ...(toml.environment?.env ?? {}) },
      limits: {
        ...(toml.environment?.cpus ? { cpus: toml.environment.cpus } : {}),
        ...(toml.environment?.memory_mb ? { memory_mb: toml.environment.memory_mb } : {}),
        ...(toml.environment?.storage_mb ? { disk_mb: toml.environment.storage_mb } : {}),
        ...(toml.environment?.gpus ? { gpus: toml.environment.gpus } : {}),
      },
    },
    evaluator: {
      strategy: "harbor",
      config: {
        tests,
        workdir,
        ...(named.length ? { outputs_denied: RUNNER_CONFIG_FILES.filter((g) => !named.includes(g)) } : {}),
        // The judge's work dir starts as the image's WORKDIR too; the agent's edits of those files
        // are its work (Harbor's tests see them in place), so they replace the image's.
        ...(inImage ? { outputs_replace: ["**/*"] } : {}),
        ...(toml.verifier?.env && Object.keys(toml.verifier.env).length ? { env: toml.verifier.env } : {}),
        ...(toml.verifier?.timeout_sec ? { timeout_seconds: toml.verifier.timeout_sec } : {}),
        ...(stepped
          ? { steps: stepped.steps, step_reward_strategy: toml.multi_step_reward_strategy ?? "mean" }
          : {}),
      },
    },
    metadata: {
      harbor: {
        dir: basename(dir),
        ...(toml.task ? { task: toml.task } : {}),
        ...(toml.metadata && Object.keys(toml.metadata).length ? { metadata: toml.metadata } : {}),
        from: docker.from,
        ...(docker.bases.length ? { bases: docker.bases } : {}),
        ...(toml.schema_version ? { schema_version: toml.schema_version } : {}),
        solution: hasSolution,
        ...(warnings.length ? { warnings } : {}),
      },
    },
  };
  return { task, warnings };
}
