import type { EngineAdapter } from "../engines/engine.ts";

/**
 * How a client's stream is answered: `live` streams the engine's answer as it is sampled (the
 * upstream call streams too), `synthesize` calls the engine without streaming and builds the whole
 * provider stream from its answer.
 */
export const STREAM_MODES = ["live", "synthesize"] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

/** `live` unless asked otherwise or the engine's streams lack token ids (then one log line says so). */
export function resolveStreamMode(
  asked: StreamMode | undefined,
  engine: EngineAdapter,
  log: (message: string) => void,
): StreamMode {
  if (asked === "synthesize") return "synthesize";
  if (engine.streamsTokenIds) return "live";
  log(
    `stream mode: ${engine.name} does not stream token ids, so client streams are synthesized from non-streamed calls${asked === "live" ? " (--stream-mode live ignored)" : ""}`,
  );
  return "synthesize";
}

/**
 * In `live` mode, frames made within this many milliseconds of the last write to the client go out
 * in one write. Each write costs a syscall and a pass through the HTTP stack, and an engine sends one
 * chunk per sampled token, so writing every chunk costs several times the CPU of a synthesized
 * stream (BENCHMARKS.md, streaming); 100 ms keeps the stream visibly live (ten updates a second) and
 * neither the first byte nor the end of the answer waits for it. 0 writes every chunk as it comes.
 */
export const DEFAULT_STREAM_FLUSH_MS = 100;
