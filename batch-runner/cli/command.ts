/** One `polar` subcommand. Each lives in its own file under `commands/` and is loaded only when run. */
export interface Command {
  /** One line for `polar --help`. */
  summary: string;
  /** Full usage text for `polar <name> --help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** Thrown for bad command-line input: printed without a stack trace, exit code 2. */
export class UsageError extends Error {}
