/**
 * Counters the proxy exposes at `GET /metrics` in Prometheus text format (Web APIs only, so the
 * Worker bundles it too). Per process (per isolate on Workers): a scraper sums over instances.
 */
import type { Provider } from "../shared/schemas/capture.ts";
import { type EngineName, isObject } from "./engines/engine.ts";
import type { LimitName } from "./fair-share/session-limiter.ts";

export type MissingIds = "prompt" | "response" | "both";

interface Counter {
  help: string;
  values: Map<string, number>;
}

export class ProxyMetrics {
  private readonly counters = new Map<string, Counter>([
    [
      "polar_proxy_captures_total",
      {
        help: "Model calls answered by the upstream with a chat completion and captured.",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_captures_without_ids_total",
      {
        help: "Captures whose upstream answer lacked prompt or response token ids (not trainable).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_prompt_tokens_total",
      {
        help: "Prompt tokens of captured calls, as the engine counted them (usage.prompt_tokens).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_cached_prompt_tokens_total",
      {
        help: "Prompt tokens the engine served from its prefix cache (usage.prompt_tokens_details.cached_tokens).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_replica_calls_total",
      {
        help: "Model calls answered by each engine replica (index in the --upstream list).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_replica_failovers_total",
      {
        help: "Calls moved off a replica that could not be reached (index in the --upstream list).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_tito_calls_total",
      {
        help: "Token-in-token-out calls by outcome: spliced, or fallback:<reason> (docs/tito.md).",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_refused_total",
      {
        help: "Calls refused with retry-after because every replica that may serve them was full.",
        values: new Map(),
      },
    ],
    [
      "polar_proxy_fair_share_refused_total",
      {
        help: "Requests answered 429 by fair share: a session over max_in_flight or tokens_per_minute, or an address over its limit of requests without a valid credential.",
        values: new Map(),
      },
    ],
  ]);

  captured(engine: EngineName, provider: Provider): void {
    this.add("polar_proxy_captures_total", `engine="${engine}",provider="${provider}"`);
  }

  withoutIds(engine: EngineName, provider: Provider, missing: MissingIds): void {
    this.add(
      "polar_proxy_captures_without_ids_total",
      `engine="${engine}",provider="${provider}",missing="${missing}"`,
    );
  }

  /** Prompt and cached-prompt tokens from the engine's usage; engines that report no cache add 0. */
  promptTokens(engine: EngineName, provider: Provider, usage: unknown): void {
    if (!isObject(usage) || !isCount(usage.prompt_tokens)) return;
    const labels = `engine="${engine}",provider="${provider}"`;
    this.add("polar_proxy_prompt_tokens_total", labels, usage.prompt_tokens);
    const details = usage.prompt_tokens_details;
    const cached = isObject(details) && isCount(details.cached_tokens) ? details.cached_tokens : 0;
    this.add("polar_proxy_cached_prompt_tokens_total", labels, cached);
  }

  routed(replica: number, failedOver: readonly number[]): void {
    this.add("polar_proxy_replica_calls_total", `replica="${replica}"`);
    for (const r of failedOver) this.add("polar_proxy_replica_failovers_total", `replica="${r}"`);
  }

  refused(provider: Provider): void {
    this.add("polar_proxy_refused_total", `provider="${provider}"`);
  }

  fairShareRefused(limit: LimitName | "address"): void {
    this.add("polar_proxy_fair_share_refused_total", `limit="${limit}"`);
  }

  tito(outcome: string): void {
    this.add("polar_proxy_tito_calls_total", `outcome="${outcome}"`);
  }

  /** Current value of one series (tests and `/healthz`-style checks). */
  value(name: string, labels: string): number {
    return this.counters.get(name)?.values.get(labels) ?? 0;
  }

  render(): string {
    let out = "";
    for (const [name, c] of this.counters) {
      out += `# HELP ${name} ${c.help}\n# TYPE ${name} counter\n`;
      for (const [labels, v] of c.values) out += `${name}{${labels}} ${v}\n`;
    }
    return out;
  }

  private add(name: string, labels: string, n = 1): void {
    const values = this.counters.get(name)?.values;
    if (values) values.set(labels, (values.get(labels) ?? 0) + n);
  }
}

function isCount(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x) && x >= 0;
}
