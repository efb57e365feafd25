import { z } from "zod";
import { gunzip, gzip } from "./encoding/gzip.ts";
import { restoreStrings, STRING_REFS_ENCODING, shareStrings } from "./encoding/string-refs.ts";
import {
  PackedLogprobs,
  PackedTokenIds,
  packLogprobs,
  packTokenIds,
  unpackLogprobs,
  unpackTokenIds,
} from "./encoding/token-packing.ts";
import { CaptureRecord } from "./schemas/capture.ts";

/**
 * The stored form of a CaptureRecord (`captures/.../{capture_id}.json.gz`): gzip of one JSON
 * object with the record's fields, except that
 * - the token arrays are tagged packed objects (`shared/encoding/token-packing.ts`); logprobs
 *   are stored as float32;
 * - `chat_request` shares its long strings with `request` when `chat_request_enc` is
 *   "strref.v1" (`shared/encoding/string-refs.ts`); without that field it is stored as is.
 * Readers dispatch on these tags, so older stored captures stay readable as the format grows.
 */
const TOKEN_FIELDS = { prompt_token_ids: true, response_token_ids: true, response_logprobs: true } as const;

const CaptureWithoutTokens = CaptureRecord.omit(TOKEN_FIELDS);

export const StoredCapture = CaptureWithoutTokens.extend({
  chat_request_enc: z.literal(STRING_REFS_ENCODING).optional(),
  prompt_token_ids: PackedTokenIds.nullable(),
  response_token_ids: PackedTokenIds.nullable(),
  response_logprobs: PackedLogprobs.nullable(),
});
export type StoredCapture = z.infer<typeof StoredCapture>;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Throws `CaptureCodecError` naming the field if `rec` is not a valid CaptureRecord. */
export async function encodeCapture(rec: CaptureRecord): Promise<Uint8Array> {
  if (typeof rec !== "object" || rec === null) throw new CaptureCodecError("capture record is not an object");
  // Token arrays are checked while packing (one pass, no per-element zod cost on the hot path).
  const { prompt_token_ids, response_token_ids, response_logprobs, ...rest } = rec;
  const head = CaptureWithoutTokens.safeParse(rest);
  if (!head.success) throw new CaptureCodecError(`capture record is invalid: ${describe(head.error)}`);
  try {
    const stored: StoredCapture = {
      ...head.data,
      chat_request: shareStrings(head.data.request, head.data.chat_request),
      chat_request_enc: STRING_REFS_ENCODING,
      prompt_token_ids: packOrNull("prompt_token_ids", prompt_token_ids, packTokenIds),
      response_token_ids: packOrNull("response_token_ids", response_token_ids, packTokenIds),
      response_logprobs: packOrNull("response_logprobs", response_logprobs, packLogprobs),
    };
    return await gzip(encoder.encode(JSON.stringify(stored)));
  } catch (err) {
    throw new CaptureCodecError(
      `capture record ${rec.capture_id} cannot be encoded: ${(err as Error).message}`,
    );
  }
}

/** Throws `CaptureCodecError` for bytes that are not a stored capture (any version we read). */
export async function decodeCapture(bytes: Uint8Array): Promise<CaptureRecord> {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(await gunzip(bytes)));
  } catch (err) {
    throw new CaptureCodecError(`stored capture is unreadable: ${(err as Error).message}`);
  }
  const parsed = StoredCapture.safeParse(json);
  if (!parsed.success) throw new CaptureCodecError(`stored capture is invalid: ${describe(parsed.error)}`);
  const { chat_request_enc, ...stored } = parsed.data;
  try {
    return {
      ...stored,
      chat_request: chat_request_enc
        ? restoreStrings(stored.request, stored.chat_request)
        : stored.chat_request,
      prompt_token_ids: stored.prompt_token_ids && unpackTokenIds(stored.prompt_token_ids),
      response_token_ids: stored.response_token_ids && unpackTokenIds(stored.response_token_ids),
      response_logprobs: stored.response_logprobs && unpackLogprobs(stored.response_logprobs),
    };
  } catch (err) {
    throw new CaptureCodecError(`stored capture ${stored.capture_id} is invalid: ${(err as Error).message}`);
  }
}

export class CaptureCodecError extends Error {}

function packOrNull<T>(field: string, values: unknown, pack: (v: readonly number[]) => T): T | null {
  if (values === null) return null;
  if (!Array.isArray(values)) throw new Error(`${field}: expected an array of numbers or null`);
  try {
    return pack(values);
  } catch (err) {
    throw new Error(`${field}: ${(err as Error).message}`);
  }
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ");
}
