import { existsSync } from "node:fs";
import { DEFAULT_VIEW_STORES, resolveStoreSpec } from "../../inspect/store-dir.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, storeFlag, untilSignal } from "../flags.ts";

const usage = `Usage: polar view [STORE] [--port 8790]

Serves a local, read-only web UI on 127.0.0.1 for a store: tasks (sessions by status, reward
histogram, stage timeline), sessions (captures, final answer, evaluation, artifacts) and traces
(decoded tokens, trainable spans, logprob shading, tool calls, chain breaks). See docs/viewer.md.

  STORE     a store directory, a \`polar run --out\` directory, file:///dir or s3://bucket/prefix
            (default .polar/run/store, else .polar/store)
  --port    port to listen on (default 8790; 0 picks a free one)`;

const command: Command = {
  summary: "browse a store's tasks, sessions and traces in a local web UI",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: { port: { type: "string" } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 1) throw new UsageError(`expected at most one STORE, got ${positionals.length}`);
    const port = Number(values.port ?? 8790);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port expects 0..65535, got ${JSON.stringify(values.port)}`);
    const spec = positionals[0] ?? DEFAULT_VIEW_STORES.find((d) => existsSync(d)) ?? DEFAULT_VIEW_STORES[0];
    const resolved = resolveStoreSpec(spec as string);
    if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(resolved) && !existsSync(resolved)) {
      console.error(`polar view: no store at ${resolved}`);
      return 1;
    }
    const store = await storeFlag(resolved);
    const { startViewer } = await import("../../viewer/server/server.ts");
    const server = await startViewer(store, { port });
    console.log(`polar view: ${store.url} at ${server.url}/ (Ctrl-C to stop)`);
    await untilSignal();
    await server.close();
    return 0;
  },
};

export default command;
