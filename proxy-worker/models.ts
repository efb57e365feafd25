import { isObject } from "./engines/engine.ts";
import { getJson, type Upstream, type UpstreamResult } from "./upstream.ts";

/** One model as the upstream lists it (vLLM adds `max_model_len`). */
export interface UpstreamModel {
  id: string;
  created?: number;
  owned_by?: string;
  max_model_len?: number;
}

/**
 * Upstream `GET /v1/models`, and the context length read from it once. A failed lookup is retried
 * after a minute; until then codecs run without a clamp.
 */
const RETRY_AFTER_FAILURE_MS = 60_000;

export class ModelCatalog {
  private readonly upstream: Upstream;
  private maxLen: number | undefined;
  private known = false;
  private pending: Promise<void> | null = null;
  /** After a failed lookup, requests go on without a clamp until then instead of each paying a round trip. */
  private retryAt = 0;

  constructor(upstream: Upstream) {
    this.upstream = upstream;
  }

  /** The cached value, without any upstream call. */
  cachedMaxModelLen(): { known: boolean; value: number | undefined } {
    return { known: this.known, value: this.maxLen };
  }

  async maxModelLen(): Promise<number | undefined> {
    if (this.known || Date.now() < this.retryAt) return this.maxLen;
    this.pending ??= this.list()
      .then((r) => {
        if (!r.ok) {
          this.retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
          return;
        }
        const first = modelsOf(r.body)[0];
        this.maxLen = typeof first?.max_model_len === "number" ? first.max_model_len : undefined;
        this.known = true;
      })
      .finally(() => {
        this.pending = null;
      });
    await this.pending;
    return this.maxLen;
  }

  list(): Promise<UpstreamResult> {
    return getJson(this.upstream, "/v1/models");
  }
}

export function modelsOf(body: Record<string, unknown>): UpstreamModel[] {
  const data = Array.isArray(body.data) ? body.data : [];
  return data.filter((m): m is UpstreamModel => isObject(m) && typeof m.id === "string");
}

export function openaiModelList(models: UpstreamModel[]): unknown {
  return {
    object: "list",
    data: models.map((m) => ({
      id: m.id,
      object: "model",
      created: m.created ?? 0,
      owned_by: m.owned_by ?? "polar",
      ...(m.max_model_len ? { max_model_len: m.max_model_len } : {}),
    })),
  };
}

export function anthropicModelList(models: UpstreamModel[]): unknown {
  const data = models.map((m) => ({
    type: "model",
    id: m.id,
    display_name: m.id,
    created_at: new Date((m.created ?? 0) * 1000).toISOString(),
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

export function googleModelList(models: UpstreamModel[]): unknown {
  return {
    models: models.map((m) => ({
      name: `models/${m.id}`,
      version: "001",
      displayName: m.id,
      ...(m.max_model_len ? { inputTokenLimit: m.max_model_len, outputTokenLimit: m.max_model_len } : {}),
      supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"],
    })),
  };
}
