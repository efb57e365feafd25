import type { z } from "zod";
import type { RuntimeSpec } from "../../shared/schemas/task.ts";
import type { RuntimeSpecInput } from "../runtime/runtime.ts";

/**
 * What an evaluator's fresh (judge) runtime gets besides the agent's spec. With side services and
 * `judge_services` "shared" (the default, Harbor's shared verifier) it joins the agent's services
 * as the agent left them instead of starting its own; "separate" starts fresh ones. A network only
 * when the task asks (`judge_network`, Harbor's verifier phase) and the operator allows it
 * (`--allow-verifier-network`), and never for a judge on the agent's loopback: that one is the
 * agent's, which has none. The agent's own spec is never changed here.
 */
export function judgeSpecOf(
  runtime: Pick<z.infer<typeof RuntimeSpec>, "services" | "judge_services" | "judge_network">,
  agentSessionId: string,
  allowVerifierNetwork: boolean,
): Pick<RuntimeSpecInput, "services" | "joinServicesOf" | "network"> {
  const shared = runtime.services.length > 0 && runtime.judge_services !== "separate";
  return {
    services: shared ? [] : runtime.services,
    ...(shared ? { joinServicesOf: agentSessionId } : {}),
    ...(allowVerifierNetwork && runtime.judge_network === true && !shared
      ? { network: "public" as const }
      : {}),
  };
}
