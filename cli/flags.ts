import { type ParseArgsConfig, parseArgs } from "node:util";
import { parseTaskCeilings, type TaskCeilings } from "../batch-runner/runtime/task-ceilings.ts";
import { ENGINES, type EngineName, isEngineName } from "../shared/engines.ts";
import { openStore, StoreSpecError } from "../shared/node/open-store.ts";
import { LOGPROBS_MODES, type LogprobsMode } from "../shared/schemas/capture.ts";
import { ENV_NAME } from "../shared/schemas/side-service.ts";
import type { ObjectStore } from "../shared/store/object-store.ts";
import { UsageError } from "./command.ts";
import { type LaunchCheck, watchLaunch } from "./launcher.ts";

/**
 * Flag handling every `polar` command shares (reading a TASKS.jsonl file is in tasks-file.ts).
 * Every bad flag is a UsageError, so main.ts prints it with the usage text and exits 2. Only the
 * CLI raises usage errors: the modules it drives (runner, embedded run, sft) throw plain errors.
 */

/** `parseArgs`, with its complaints (unknown flag, missing value) turned into usage errors. */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** An optional `--upstream`: an inference server root, http(s) only. */
export function upstreamFlag(value: string | undefined): string | undefined {
  if (value !== undefined && !/^https?:\/\/[^/]/.test(value)) {
    throw new UsageError(`--upstream must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** `--engine` for the commands that start their own proxy (`run`, `sft`); vllm when absent. */
export function engineFlag(value: string | undefined): EngineName {
  const engine = value ?? "vllm";
  if (!isEngineName(engine)) {
    throw new UsageError(`--engine must be ${ENGINES.join(" or ")}, got ${engine}`);
  }
  return engine;
}

/** `--logprobs-mode`: what the engine's logprobs mean, recorded on every capture; the engine's default when absent. */
export function logprobsModeFlag(value: string | undefined): LogprobsMode | undefined {
  if (value !== undefined && !(LOGPROBS_MODES as readonly string[]).includes(value)) {
    throw new UsageError(
      `--logprobs-mode must be one of ${LOGPROBS_MODES.join(", ")}, got ${JSON.stringify(value)}`,
    );
  }
  return value as LogprobsMode | undefined;
}

/** How often a server checks that the process that started it, and its launcher, are still there. */
const PARENT_POLL_MS = 500;

/**
 * Resolves on the first SIGINT or SIGTERM, or once the process that started this one, or the npm
 * process that launched it, is gone (cli/launcher.ts): how the long-running servers (`policy`,
 * `proxy`, `serve`, `view`) wait. `npx polar view &` then `kill $!` kills npm, which does not always
 * pass the signal on: the server would keep its port forever.
 */
export function untilSignal(check: LaunchCheck = watchLaunch()): Promise<void> {
  return new Promise<void>((resolve) => {
    const poll = () => {
      const gone = check();
      if (gone === null) return;
      console.error(`polar: stopping: ${gone}`);
      stop();
    };
    const watch = setInterval(poll, PARENT_POLL_MS).unref();
    const stop = () => {
      clearInterval(watch);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    poll();
  });
}

/** Parses an integer flag in [min, max]; absent -> fallback. */
export function intFlag(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${flag} expects an integer in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

export function numberFlag(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${flag} expects a number in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** `memory` or an http(s) SQS queue URL. */
export function queueFlag(flag: string, value: string | undefined, required: boolean): string | undefined {
  if (value === undefined) {
    if (required) throw new UsageError(`--${flag} is required: "memory" or an SQS queue URL`);
    return undefined;
  }
  if (value !== "memory" && !/^https?:\/\/[^/]+\/./.test(value)) {
    throw new UsageError(
      `--${flag} expects "memory" or an SQS queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** `--store DIR|file://...|s3://bucket/prefix` (or another flag naming a store), opened. */
export async function storeFlag(spec: string, flag = "store"): Promise<ObjectStore> {
  try {
    return openStore(spec);
  } catch (err) {
    if (err instanceof StoreSpecError) throw new UsageError(`--${flag}: ${err.message}`);
    throw err;
  }
}

/** HMAC keys shorter than this are guessable; `openssl rand -hex 32` gives 64 characters. */
export const MIN_SIGNING_KEY_CHARS = 32;

/** A warning for a short POLAR_SIGNING_KEY (null when it is long enough). */
export function weakSigningKeyWarning(key: string | null | undefined): string | null {
  if (!key || key.length >= MIN_SIGNING_KEY_CHARS) return null;
  return (
    `warning: POLAR_SIGNING_KEY is ${key.length} characters; anyone who guesses it can mint session ` +
    `tokens. Use at least ${MIN_SIGNING_KEY_CHARS} random characters, e.g. \`export POLAR_SIGNING_KEY=$(openssl rand -hex 32)\``
  );
}

/** `--max-task-limits NAME=N,...`: the operator's ceilings on what a task asks for; absent: none. */
export function taskCeilingsFlag(value: string | undefined): TaskCeilings | undefined {
  if (value === undefined) return undefined;
  try {
    return parseTaskCeilings(value);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * `--service-env NAME[,NAME...]` (repeatable): the variables of this process's environment a task's
 * side services may take. Polar's own (POLAR_*: the signing key, control token) are never passed.
 */
export function serviceEnvFlag(values: string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  const names = values.flatMap((v) => v.split(",")).map((n) => n.trim());
  for (const n of names) {
    if (!ENV_NAME.test(n))
      throw new UsageError(`--service-env: ${JSON.stringify(n)} is not an environment variable name`);
    if (n.startsWith("POLAR_"))
      throw new UsageError(`--service-env: ${n} is Polar's own setting and never passed to a task's service`);
  }
  return [...new Set(names)];
}

/** The flags that bound images (`polar proxy`, `polar serve`); the Worker's vars mirror them. */
export const IMAGE_LIMIT_OPTIONS = {
  "max-image-mb": { type: "string" },
  "max-image-pixels": { type: "string" },
  "max-images-per-call": { type: "string" },
  "max-session-images": { type: "string" },
  "max-session-image-mb": { type: "string" },
} as const;

export const IMAGE_LIMIT_USAGE = `  --max-image-mb N      an image larger than N MiB (decoded) is refused with 400 (default 10)
  --max-image-pixels N  an image whose header declares more than N pixels (width x height) is
                        refused with 400 before anything decodes it (default 16777216, 4096x4096)
  --max-images-per-call N  a call with more image parts (repeats counted) is refused (default 100)
  --max-session-images N, --max-session-image-mb N  new image objects, and their MiB, one session
                        may add to the store; the call that would pass either is refused with 400
                        (defaults 4096 and 1024; docs/security.md)`;

/** The image limits given on the command line, each checked; absent ones take the proxy's defaults. */
export function imageLimitFlags(values: Partial<Record<keyof typeof IMAGE_LIMIT_OPTIONS, string>>): {
  maxImageBytes?: number;
  maxImagePixels?: number;
  maxImagesPerCall?: number;
  maxSessionImages?: number;
  maxSessionImageBytes?: number;
} {
  const mib = (flag: keyof typeof IMAGE_LIMIT_OPTIONS, max: number) => {
    const given = values[flag];
    return given === undefined ? undefined : Math.floor(numberFlag(flag, given, 1, 0.001, max) * 1048576);
  };
  const int = (flag: keyof typeof IMAGE_LIMIT_OPTIONS, max: number) => {
    const given = values[flag];
    return given === undefined ? undefined : intFlag(flag, given, 1, 1, max);
  };
  const out = {
    maxImageBytes: mib("max-image-mb", 4096),
    maxImagePixels: int("max-image-pixels", 2 ** 40),
    maxImagesPerCall: int("max-images-per-call", 100_000),
    maxSessionImages: int("max-session-images", 100_000_000),
    maxSessionImageBytes: mib("max-session-image-mb", 1_048_576),
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}
