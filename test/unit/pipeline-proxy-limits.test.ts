import { describe, expect, it } from "vitest";
import { proxyLimitsOf } from "../../batch-runner/pipeline/session-init.ts";
import { RUNNER_DEFAULTS } from "../../batch-runner/runner-defaults.ts";

/** What the runner mints into a session token's `lim` claim (docs/security.md, "Fair share"). */
describe("proxy limits: the task's agent.proxy_limits over the runner's", () => {
  it("takes the runner's defaults when neither the task nor `polar runner` names any", () => {
    expect(proxyLimitsOf(undefined)).toEqual({
      maxInFlight: RUNNER_DEFAULTS.proxyMaxInFlight,
      tokensPerMinute: RUNNER_DEFAULTS.proxyTokensPerMinute,
    });
  });

  it("takes each key the task sets, and the runner's (--session-*) for the other", () => {
    const runner = { maxInFlight: 3, tokensPerMinute: 50_000 };
    expect(proxyLimitsOf({ max_in_flight: 1 }, runner)).toEqual({ maxInFlight: 1, tokensPerMinute: 50_000 });
    expect(proxyLimitsOf({ tokens_per_minute: 9 }, runner)).toEqual({ maxInFlight: 3, tokensPerMinute: 9 });
  });

  it("leaves a key out (no limit) where the runner was told 0 and the task says nothing", () => {
    expect(proxyLimitsOf(undefined, { tokensPerMinute: 1000 })).toEqual({ tokensPerMinute: 1000 });
    expect(proxyLimitsOf({ max_in_flight: 2 }, {})).toEqual({ maxInFlight: 2 });
  });
});
