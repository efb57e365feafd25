#!/usr/bin/env node
// The CLI is TypeScript run by Node's built-in type stripping (Node >= 22.18), so there is no build step.
import { main } from "../batch-runner/cli/main.ts";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
