/** One `polar` subcommand. Each lives in its own file under `commands/` and is loaded only when run. */
export interface Command {
  /** One line for `polar --help`. */
  summary: string;
  /** Full usage text for `polar <name> --help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
}

// Defined below the CLI, so runner-side flag parsers need not import from it.
export { UsageError } from "./usage-error.ts";
