import { mkdir, stat, writeFile } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { toAtif } from "../../export/atif.ts";
import { type AtifImage, ImageExportError, writeAtifImages } from "../../export/atif-images.ts";
import { InspectInputError, loadInspectable } from "../../inspect/load-inspectable.ts";
import { openStore } from "../../shared/node/open-store.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags } from "../flags.ts";

const usage = `Usage: polar export --format atif FILE [--out DIR] [--store STORE] [--agent NAME] [--model NAME] [--no-text]

Converts a trajectory or shard into another format. One format so far:

  atif   Harbor's Agent Trajectory Interchange Format v1.5, one trajectory per session, each
         trace read as its chat: system, user and agent steps in plain text, tool calls as
         tool_calls with their results as the observation, each sampled turn's
         prompt_token_ids, completion_token_ids and logprobs in its metrics; Polar's flags
         (orphan, break reason, reward) under "extra" (mapping: docs/trainers.md).

  FILE          a SessionResult (results/{task}/{session}.json), a Parquet shard or its JSONL twin
  --out DIR     write DIR/{session_id}.json per session (default: one JSON object per line on stdout),
                and each image the traces hold once, as DIR/images/{sha256}.{ext}
  --store STORE where the images are (a directory or s3://bucket/prefix); default: the store FILE
                sits in (its trajectories/ or results/{task}/ folder). Images are listed under
                extra.polar.images (docs/computer-use.md)
  --agent NAME  agent.name (default: polar)
  --model NAME  agent.model_name
  --no-text     leave messages empty (one agent step per run of sampled tokens) instead of
                reading the chat with the Qwen3 tokenizer`;

const command: Command = {
  summary: "convert a trajectory or shard to another format (ATIF v1.5)",
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags({
      args: argv,
      options: {
        format: { type: "string" },
        out: { type: "string" },
        agent: { type: "string" },
        model: { type: "string" },
        text: { type: "boolean" },
        store: { type: "string" },
      },
      allowNegative: true,
      allowPositionals: true,
      strict: true,
    });
    if (values.format === undefined)
      throw new UsageError("--format is required (the one format so far: atif)");
    if (values.format !== "atif")
      throw new UsageError(`--format must be atif, got ${JSON.stringify(values.format)}`);
    if (positionals.length !== 1) throw new UsageError(`expected one FILE, got ${positionals.length}`);
    if ((await stat(positionals[0]).catch(() => null))?.isDirectory()) {
      throw new UsageError(
        `${positionals[0]} is a directory: export takes one result (.json) or shard (.parquet, .jsonl) file`,
      );
    }
    let data: Awaited<ReturnType<typeof loadInspectable>>;
    try {
      data = await loadInspectable(positionals[0]);
    } catch (err) {
      if (err instanceof InspectInputError) {
        console.error(`polar export: ${err.message}`);
        return 1;
      }
      throw err;
    }
    let chat: import("../../export/atif-chat-steps.ts").ChatTokenizer | undefined;
    if (values.text !== false) {
      const { loadQwen3 } = await import("../../shared/node/qwen3/qwen3.ts");
      chat = loadQwen3();
    }
    const { version } = (await import("../../package.json", { with: { type: "json" } })).default;
    const trajectories = toAtif(data.rows, {
      agentName: values.agent ?? "polar",
      agentVersion: version,
      modelName: values.model,
      chat,
    });
    if (values.out) {
      await mkdir(values.out, { recursive: true });
      const images = trajectories.flatMap((t) => (t.extra.polar as { images?: AtifImage[] }).images ?? []);
      if (images.length > 0) {
        const spec = values.store ?? storeOfFile(positionals[0]);
        if (spec === null) {
          console.error(`polar export: ${positionals[0]} is not inside a store: pass --store for its images`);
          return 1;
        }
        try {
          const n = await writeAtifImages(images, openStore(spec), values.out);
          console.error(`polar export: ${n} images in ${join(values.out, "images")}`);
        } catch (err) {
          if (!(err instanceof ImageExportError)) throw err;
          console.error(`polar export: ${err.message}`);
          return 1;
        }
      }
      for (const t of trajectories) {
        await writeFile(join(values.out, `${t.session_id}.json`), `${JSON.stringify(t, null, 2)}\n`);
      }
      console.error(`polar export: ${trajectories.length} ATIF trajectories in ${values.out}`);
    } else {
      for (const t of trajectories) process.stdout.write(`${JSON.stringify(t)}\n`);
    }
    return 0;
  },
};
export default command;

/** The store root a result or shard file sits in, by the layout of docs/architecture.md; else null. */
function storeOfFile(file: string): string | null {
  const parts = resolve(file).split(sep);
  const n = parts.length;
  if (n >= 2 && parts[n - 2] === "trajectories") return parts.slice(0, n - 2).join(sep) || sep;
  if (n >= 3 && parts[n - 3] === "results") return parts.slice(0, n - 3).join(sep) || sep;
  return null;
}
