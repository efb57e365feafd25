import { modelsOf } from "./codecs/common/upstream-model.ts";
import { getJson, type Upstream, type UpstreamResult } from "./upstream.ts";

export { modelsOf } from "./codecs/common/upstream-model.ts";

/**
 * Upstream `GET /v1/models`, and the context length read from it once. A failed lookup is retried
 * after a minute; until then codecs run without a clamp.
 */
const RETRY_AFTER_FAILURE_MS = 60_000;

export class ModelCatalog {
  private readonly upstream: () => Upstream;
  private maxLen: number | undefined;
  private known = false;
  private pending: Promise<void> | null = null;
  /** After a failed lookup, requests go on without a clamp until then instead of each paying a round trip. */
  private retryAt = 0;

  /** `upstream` names the server to ask at each lookup (with replicas: a healthy one). */
  constructor(upstream: () => Upstream) {
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
    return getJson(this.upstream(), "/v1/models");
  }
}
