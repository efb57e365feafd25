import { hint } from "../shared/tasks/validate-task.ts";
import { type Command, UsageError } from "./command.ts";
import { noteParentAtStart } from "./launcher.ts";

/** Command name -> lazy loader, so `polar --help` does not load the proxy, tokenizer or AWS SDKs. */
const commands: Record<string, () => Promise<{ default: Command }>> = {
  proxy: () => import("./commands/proxy.ts"),
  serve: () => import("./commands/serve.ts"),
  policy: () => import("./commands/policy.ts"),
  runner: () => import("./commands/runner.ts"),
  submit: () => import("./commands/submit.ts"),
  run: () => import("./commands/run.ts"),
  sft: () => import("./commands/sft.ts"),
  token: () => import("./commands/token.ts"),
  reconstruct: () => import("./commands/reconstruct.ts"),
  reward: () => import("./commands/reward.ts"),
  inspect: () => import("./commands/inspect.ts"),
  export: () => import("./commands/export.ts"),
  "import-harbor": () => import("./commands/import-harbor.ts"),
  view: () => import("./commands/view.ts"),
};

async function help(): Promise<string> {
  const lines = ["Usage: polar <command> [options]", "", "Commands:"];
  for (const [name, load] of Object.entries(commands)) {
    const cmd = (await load()).default;
    lines.push(`  ${name.padEnd(12)} ${cmd.summary}`);
  }
  lines.push(
    "",
    "Run `polar help <command>` (or `polar <command> --help`) for the options of one command,",
    "`polar --version` for the version. Task files: docs/tasks.md.",
  );
  return lines.join("\n");
}

/** The package version, read once from package.json (no build step to stamp it in). */
async function version(): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  return `polar ${pkg.version} (node ${process.version})`;
}

/** `parentPid`: this process's parent as `bin/polar.js` saw it first (cli/launcher.ts). */
export async function main(argv: string[], launch?: { parentPid: number }): Promise<number> {
  if (launch) noteParentAtStart(launch.parentPid);
  const [name, ...rest] = argv;
  if (name === "--version" || name === "-V" || name === "version") {
    console.log(await version());
    return 0;
  }
  // `polar help run` is `polar run --help`.
  if (name === "help" && rest.length > 0) return main([rest[0], "--help"]);
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(await help());
    return name ? 0 : 2;
  }
  const load = commands[name];
  if (!load) {
    console.error(`polar: unknown command "${name}"${hint(name, Object.keys(commands))}\n\n${await help()}`);
    return 2;
  }
  const cmd = (await load()).default;
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(cmd.usage);
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`polar ${name}: ${err.message}\n\n${cmd.usage}`);
      return 2;
    }
    throw err;
  }
}
