/**
 * Starts the dry-run policy for a test on 127.0.0.1 with an ephemeral port:
 *
 *   let policy: PolicyServer;
 *   beforeAll(async () => { policy = await startPolicy(); });
 *   afterAll(() => policy.close());
 *   // policy.url is the base (append /v1 for OpenAI clients); policy.counts.chat_completions
 *   // counts upstream calls (policy.resetCounts() zeroes them).
 */
import {
  type PolicyServer,
  type PolicyServerOptions,
  startPolicyServer,
} from "../../dry-run-policy/server.ts";

export type { PolicyServer };

export function startPolicy(options: Omit<PolicyServerOptions, "host" | "port"> = {}): Promise<PolicyServer> {
  return startPolicyServer({ ...options, host: "127.0.0.1", port: 0 });
}

/** The first user message text that makes the policy follow `steps` (lines like `shell: ls`). */
export function scriptMessage(steps: readonly string[], preface = "Follow the script."): string {
  return `${preface}\n\n\`\`\`polar-script\n${steps.join("\n")}\n\`\`\`\n`;
}
