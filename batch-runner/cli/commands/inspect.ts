import { InspectInputError, loadInspectable } from "../../inspect/load-inspectable.ts";
import { ANSI_STYLE, MARKER_STYLE, renderTrace } from "../../inspect/render-spans.ts";
import { summarize } from "../../inspect/summarize.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags } from "../flags.ts";

const usage = `Usage: polar inspect FILE [--no-text] [--color | --no-color]

Prints a readable summary of a trajectory or shard: traces, token counts, trainable fraction,
rewards, and each trace decoded with the Qwen3 tokenizer, trainable (mask 1) spans marked.

  FILE          a SessionResult (results/{task}/{session}.json), a Parquet shard
                (trajectories/{task}.parquet) or its JSONL twin (.jsonl)
  --no-text     summary only, no decoded text
  --color       mark trainable spans in green (default when stdout is a terminal)
  --no-color    mark trainable spans as [[...]] (default otherwise)`;

const command: Command = {
  summary: "readable summary of a trajectory or shard, trainable spans marked",
  usage,
  async run(argv) {
    const { values, positionals } = parse(argv);
    if (positionals.length !== 1) throw new UsageError(`expected one FILE, got ${positionals.length}`);
    const [file] = positionals;
    let data: Awaited<ReturnType<typeof loadInspectable>>;
    try {
      data = await loadInspectable(file);
    } catch (err) {
      if (err instanceof InspectInputError) {
        console.error(`polar inspect: ${err.message}`);
        return 1;
      }
      throw err;
    }
    const out = summarize(file, data);
    if (values.text !== false) {
      const { loadQwen3 } = await import("../../dry-run-policy/qwen3.ts");
      const qwen = loadQwen3();
      const decode = (ids: number[]) => qwen.decode(ids, { skipSpecialTokens: false });
      const style = (values.color ?? process.stdout.isTTY) ? ANSI_STYLE : MARKER_STYLE;
      for (const row of data.rows) {
        out.push(
          "",
          `--- ${row.session_id} #${row.sample_index} trace ${row.trace_index} ---`,
          renderTrace(row, decode, style),
        );
      }
    }
    console.log(out.join("\n"));
    return 0;
  },
};
export default command;

function parse(argv: string[]) {
  return parseFlags({
    args: argv,
    options: { text: { type: "boolean" }, color: { type: "boolean" } },
    allowNegative: true,
    allowPositionals: true,
    strict: true,
  });
}
