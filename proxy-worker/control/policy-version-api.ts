import type { OpenAPIHono } from "@hono/zod-openapi";
import type { RuntimeState } from "./control-deps.ts";
import { errorBody, noRuntimeState } from "./error-body.ts";
import { getPolicyVersionRoute, setPolicyVersionRoute } from "./routes.ts";

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

  app.openapi(setPolicyVersionRoute, (c) => {
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
    // Checked and set in one turn of the event loop: two trainers racing cannot both pass the check.
    source.set(String(version), "trainer");
    return c.json({ version: String(version), set_by: "trainer" as const, previous }, 200);
  });
}
