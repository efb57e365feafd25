import type { OpenAPIHono } from "@hono/zod-openapi";
import type { RuntimeState } from "./control-deps.ts";
import { errorBody, noRuntimeState } from "./error-body.ts";
import { getPolicyVersionRoute, setPolicyVersionRoute } from "./routes.ts";
import { SharedStateError } from "./shared-state.ts";

/**
 * `/v1/policy-version`: the trainer names the weights it just synced, for engines that report no
 * version of their own (`/weight_info`; an engine's own version still wins on its captures, since
 * it names the weights that actually sampled). Versions are the trainer's step counter: one lower
 * than the current is refused, because captures stamped with it would be taken for older weights.
 */
export function mountPolicyVersionRoutes(app: OpenAPIHono, state: RuntimeState | null): void {
  app.openapi(getPolicyVersionRoute, (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const source = state.policyVersion;
    return c.json({ version: source.get(), set_by: source.setBy?.() ?? "proxy" }, 200);
  });

  app.openapi(setPolicyVersionRoute, async (c) => {
    if (!state) return c.json(noRuntimeState(), 501);
    const { version } = c.req.valid("json");
    const source = state.policyVersion;
    const previous = source.get();
    // A label that is not a step number (`--policy-version sft-base`) has no order to keep.
    if (previous !== null && /^\d+$/.test(previous) && version < Number(previous)) {
      return c.json(
        errorBody(
          `policy version ${version} is lower than the current ${previous}: versions only go forward. ` +
            "Send the step the weights were synced at; to start a new run over, restart the proxy or set any " +
            "version with POST /admin/policy-version (admin token)",
        ),
        409,
      );
    }
    // Checked against the stored version (read after this call arrived), then stored: one trainer's
    // calls, through any proxy, only go forward. Two trainers racing through two proxies are not
    // ordered against each other (the store has no compare-and-set); one trainer owns the version.
    try {
      await state.saveVersion(String(version), "trainer");
    } catch (err) {
      if (!(err instanceof SharedStateError)) throw err;
      return c.json(errorBody(err.message), 503);
    }
    return c.json({ version: String(version), set_by: "trainer" as const, previous }, 200);
  });
}
