import { stat } from "node:fs/promises";
import { summarizeCapture } from "../../inspect/capture-summary.ts";
import {
  type Inspectable,
  InspectInputError,
  inspectableFromBytes,
  loadInspectable,
} from "../../inspect/load-inspectable.ts";
import { ANSI_STYLE, MARKER_STYLE, renderTrace, type TokenTrace } from "../../inspect/render-spans.ts";
import { findSessionResult, summarizeStore } from "../../inspect/run-summary.ts";
import { resolveStoreSpec } from "../../inspect/store-dir.ts";
import { summarize } from "../../inspect/summarize.ts";
import { type Command, UsageError } from "../command.ts";
import { parseFlags, storeFlag } from "../flags.ts";

const usage = `Usage: polar inspect FILE|STORE [--session S] [--trace N] [--system] [--no-text] [--color | --no-color]

Prints a readable summary of a trajectory, shard, capture or whole store: traces, token counts,
trainable fraction, rewards, chain breaks and orphans, and each trace decoded with the Qwen3
tokenizer, trainable (mask 1) spans marked. A legend says what the marks mean.

  FILE          a SessionResult (results/{task}/{session}.json), a Parquet shard
                (trajectories/{task}.parquet), its JSONL twin (.jsonl), or a raw capture
                (captures/{task}/{session}/{id}.json.gz)
  STORE         a store directory, a \`polar run --out\` directory or s3://bucket/prefix: per task,
                sessions by status and mean reward; with --session, that session's result
  --session S   only the traces of session S
  --trace N     only trace N (0-based) of each session shown
  --system      print the system prompt (folded into one line by default)
  --no-text     summary only, no decoded text
  --color       trainable spans in green (default when stdout is a terminal)
  --no-color    trainable spans between ⟦ and ⟧; a literal ⟦ or ⟧ in the text is escaped
                (default otherwise)

For a browsable view of a whole store, see \`polar view\`.`;

const command: Command = {
  summary: "readable summary of a trajectory, shard, capture or store, trainable spans marked",
  usage,
  async run(argv) {
    const { values, positionals } = parse(argv);
    if (positionals.length !== 1)
      throw new UsageError(`expected one FILE or STORE, got ${positionals.length}`);
    const [target] = positionals as [string];
    const traceIndex = values.trace === undefined ? undefined : Number(values.trace);
    if (traceIndex !== undefined && (!Number.isInteger(traceIndex) || traceIndex < 0))
      throw new UsageError(`--trace expects an integer >= 0, got ${JSON.stringify(values.trace)}`);
    let label = target;
    let data: Inspectable;
    try {
      if (await isStore(target)) {
        const store = await storeFlag(resolveStoreSpec(target));
        if (values.session === undefined) {
          console.log((await summarizeStore(store)).join("\n"));
          return 0;
        }
        const key = await findSessionResult(store, values.session);
        const bytes = key ? await store.get(key) : null;
        if (!key || !bytes) {
          console.error(`polar inspect: no result for session ${values.session} in ${store.url}`);
          return 1;
        }
        label = `${store.url}/${key}`;
        data = await inspectableFromBytes(key, bytes);
      } else {
        data = await loadInspectable(target);
      }
    } catch (err) {
      if (err instanceof InspectInputError) {
        console.error(`polar inspect: ${err.message}`);
        return 1;
      }
      throw err;
    }
    const keep = data.rows.map(
      (r) =>
        (values.session === undefined || r.session_id === values.session) &&
        (traceIndex === undefined || r.trace_index === traceIndex),
    );
    const shown: Inspectable = {
      ...data,
      rows: data.rows.filter((_, i) => keep[i]),
      extras: data.extras.filter((_, i) => keep[i]),
    };
    if (data.kind !== "capture" && shown.rows.length === 0 && data.rows.length > 0) {
      console.error(
        `polar inspect: no trace matches${values.session !== undefined ? ` --session ${values.session}` : ""}${traceIndex !== undefined ? ` --trace ${traceIndex}` : ""} (${data.rows.length} traces in ${label})`,
      );
      return 1;
    }
    const out = data.capture ? summarizeCapture(label, data.capture) : summarize(label, shown);
    if (values.text !== false) {
      const traces: { title: string; trace: TokenTrace }[] = data.capture
        ? captureTrace(data.capture)
        : shown.rows.map((row) => ({
            title: `${row.session_id} #${row.sample_index} trace ${row.trace_index}`,
            trace: row,
          }));
      if (traces.length > 0) {
        const { loadQwen3 } = await import("../../shared/node/qwen3/qwen3.ts");
        const { qwen3ChatTokenIds } = await import("../../shared/node/qwen3/chat-segments.ts");
        const qwen = loadQwen3();
        const opts = {
          tokenBytes: (id: number) => qwen.tokenBytes(id),
          chatIds: qwen3ChatTokenIds(qwen),
          showSystem: values.system,
          standalone: new Map<number, string | null>(),
        };
        const style = (values.color ?? process.stdout.isTTY) ? ANSI_STYLE : MARKER_STYLE;
        out.push("", style.legend);
        for (const { title, trace } of traces)
          out.push("", `--- ${title} ---`, renderTrace(trace, style, opts));
      }
    }
    console.log(out.join("\n"));
    return 0;
  },
};
export default command;

/** A capture's prompt and response as one trace: every response token was sampled. */
function captureTrace(c: NonNullable<Inspectable["capture"]>): { title: string; trace: TokenTrace }[] {
  if (!c.prompt_token_ids || !c.response_token_ids) return [];
  return [
    {
      title: `capture ${c.capture_id}`,
      trace: {
        prompt_ids: c.prompt_token_ids,
        response_ids: c.response_token_ids,
        loss_mask: c.response_token_ids.map(() => 1),
      },
    },
  ];
}

async function isStore(target: string): Promise<boolean> {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(target)) return true;
  try {
    return (await stat(target)).isDirectory();
  } catch {
    return false;
  }
}

function parse(argv: string[]) {
  return parseFlags({
    args: argv,
    options: {
      text: { type: "boolean" },
      color: { type: "boolean" },
      system: { type: "boolean" },
      session: { type: "string" },
      trace: { type: "string" },
    },
    allowNegative: true,
    allowPositionals: true,
    strict: true,
  });
}
