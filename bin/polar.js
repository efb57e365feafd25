#!/usr/bin/env node
// The CLI is TypeScript run by Node's built-in type stripping, so there is no build step. An older
// Node cannot even load it (ERR_UNKNOWN_FILE_EXTENSION ".ts"): say which Node is needed, and how to
// get it, before anything .ts is loaded (hence the dynamic import).
// Taken first: loading the CLI takes a while, and a launcher that dies meanwhile re-parents us
// (cli/launcher.ts).
const parentPid = process.ppid;
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `polar needs Node.js 24 (at least 22.18, for its built-in TypeScript support); this is ${process.version}.\n` +
      "Install Node 24 as the README says (`npm install --prefix ~/.cache/polar-node24 node@24` and\n" +
      "`export PATH=~/.cache/polar-node24/node_modules/.bin:$PATH`), or with nvm or fnm, then run polar\n" +
      "again from the repository root: `npx polar ...`.",
  );
  process.exit(1);
}
const { main } = await import("../cli/main.ts");
main(process.argv.slice(2), { parentPid }).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
