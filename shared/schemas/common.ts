import { z } from "zod";
import { isValidId } from "../ids.ts";

export const Id = z
  .string()
  .refine(isValidId, { message: "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$ and not contain '..'" });

export const JsonObject = z.record(z.string(), z.unknown());
export const StringMap = z.record(z.string(), z.string());

/** ISO-8601 timestamp as produced by `new Date().toISOString()`. */
export const Timestamp = z.string().datetime({ offset: true });

export const TokenIds = z.array(z.number().int().nonnegative());
export const Logprobs = z.array(z.number());
