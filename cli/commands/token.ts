import { isValidId } from "../../shared/ids.ts";
import { DEFAULT_TTL_SECONDS, mintSessionToken } from "../../shared/session-token.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, weakSigningKeyWarning } from "../flags.ts";

const usage = `Usage: polar token --session S --task T [--ttl ${DEFAULT_TTL_SECONDS}] [--attempt N]

Mints a session token for a harness the runner does not start (a hosted harness): give it
as the harness's API key, or use the path form /s/{token}/v1/... on the proxy.

  --session S   session id (letters, digits, "_", ".", "-"; starts with a letter or digit)
  --task T      task id (same form)
  --ttl SECS    lifetime in seconds (default ${DEFAULT_TTL_SECONDS})
  --attempt N   attempt number, an integer >= 0 (default 0)

Environment: POLAR_SIGNING_KEY (required), the key the proxy verifies tokens with.`;

const command: Command = {
  summary: "mint a session token for a hosted harness",
  usage,
  async run(argv) {
    const { values } = parseStrict(argv);
    const session = required(values.session, "--session");
    const task = required(values.task, "--task");
    if (!isValidId(session)) throw new UsageError(`--session ${JSON.stringify(session)} is not a valid id`);
    if (!isValidId(task)) throw new UsageError(`--task ${JSON.stringify(task)} is not a valid id`);
    const ttlSeconds = integerFlag(values.ttl, "--ttl", DEFAULT_TTL_SECONDS, 1);
    const attempt = integerFlag(values.attempt, "--attempt", 0, 0);
    const key = process.env.POLAR_SIGNING_KEY;
    if (!key) {
      console.error(
        "polar token: POLAR_SIGNING_KEY is not set; set it to the key the proxy verifies tokens with.",
      );
      return 1;
    }
    const weak = weakSigningKeyWarning(key);
    if (weak) console.error(`polar token: ${weak}`);
    console.log(await mintSessionToken({ sessionId: session, taskId: task, attempt, ttlSeconds }, key));
    return 0;
  },
};
export default command;

function parseStrict(argv: string[]) {
  return parseFlags({
    args: argv,
    options: {
      session: { type: "string" },
      task: { type: "string" },
      ttl: { type: "string" },
      attempt: { type: "string" },
    },
    allowPositionals: false,
    strict: true,
  });
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required`);
  return value;
}

function integerFlag(value: string | undefined, flag: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${flag} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}
