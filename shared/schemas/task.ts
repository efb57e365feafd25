import { z } from "zod";
import { Id, JsonObject } from "./common.ts";
import { McpServers, mcpRefusal } from "./mcp-servers.ts";
import { ProxyLimits } from "./proxy-limits.ts";
import { TaskEnv } from "./reserved-env.ts";
import { AgentSampling } from "./sampling.ts";
import { SideServices } from "./side-service.ts";

export const HARNESSES = [
  "claude_code",
  "codex",
  "gemini_cli",
  "qwen_code",
  "opencode",
  "pi",
  "mini_swe_agent",
  "hermes",
  "openhands_sdk",
  "openclaw",
  "cline",
  "browser_use",
  "shell",
] as const;
export const Harness = z.enum(HARNESSES);

export const AgentSpec = z
  .strictObject({
    /** Which harness preset runs the session. */
    harness: Harness,
    /** Model name the harness is told to use; the proxy forwards it upstream. */
    model: z.string().min(1).default("policy"),
    env: TaskEnv.default({}),
    /** Preset-specific settings (e.g. `command` for the `shell` harness). */
    settings: JsonObject.default({}),
    /** Sampling the proxy applies over what the harness sends (shared/schemas/sampling.ts). */
    sampling: AgentSampling.optional(),
    /** Token-in, token-out: the proxy splices each prompt from the session's captured ids (docs/tito.md). */
    token_in_token_out: z.boolean().optional(),
    /** Per-session limits the proxy enforces (calls in flight, tokens per minute); runner defaults fill gaps. */
    proxy_limits: ProxyLimits.optional(),
    /** MCP servers for the agent, written into the harness's own MCP config (shared/schemas/mcp-servers.ts). */
    mcp_servers: McpServers.optional(),
  })
  .superRefine((agent, ctx) => {
    // Refused at validation, by harness name: a preset without an MCP config would run the session
    // without the tools the task counts on.
    const refusal = agent.mcp_servers?.length ? mcpRefusal(agent.harness, agent.mcp_servers) : null;
    if (refusal) ctx.addIssue({ code: "custom", path: ["mcp_servers"], message: refusal });
  });

export const RUNTIME_BACKENDS = ["process", "bwrap", "apptainer", "docker"] as const;

export const RuntimeSpec = z
  .strictObject({
    /** A sandbox by default; `process` runs on the host and only where the operator allows it. */
    backend: z.enum(RUNTIME_BACKENDS).default("bwrap"),
    /** Container/SIF image, or a root directory for bwrap; ignored by `process`. */
    image: z.string().optional(),
    /** Shell commands run in the work dir during INIT, before the harness starts. */
    prepare: z.array(z.string()).default([]),
    env: TaskEnv.default({}),
    limits: z
      .strictObject({
        cpus: z.number().positive().optional(),
        memory_mb: z.number().int().positive().optional(),
        gpus: z.number().int().nonnegative().optional(),
        /** Processes and threads of the session at once (a fork bomb stops here). */
        pids: z.number().int().positive().optional(),
        /** Size of the session's writable work dir and home together, in MiB. */
        disk_mb: z.number().int().positive().optional(),
        /** Bytes the harness may print on stdout and stderr together, in MiB. */
        output_mb: z.number().int().positive().optional(),
      })
      .default({}),
    /** Containers started beside the agent's on a loopback only they share (docker backend; side-service.ts). */
    services: SideServices,
    /**
     * A judge's runtime (an evaluator's fresh one) with side services: "shared" joins the agent's, as
     * the agent left them (Harbor's shared verifier); "separate" starts its own. Default shared.
     */
    judge_services: z.enum(["shared", "separate"]).optional(),
    /** The judge asks for a network (Harbor's verifier phase): given only under `--allow-verifier-network`. */
    judge_network: z.boolean().optional(),
  })
  .superRefine((runtime, ctx) => {
    // Only the docker runtime starts them; elsewhere the task would run without its services.
    if (runtime.services.length > 0 && runtime.backend !== "docker")
      ctx.addIssue({
        code: "custom",
        path: ["services"],
        message: `side services run only on the docker backend, not ${runtime.backend}`,
      });
  });

export const BUILDER_STRATEGIES = ["per_request", "prefix_merging"] as const;

export const BuilderSpec = z.strictObject({
  strategy: z.enum(BUILDER_STRATEGIES).default("prefix_merging"),
  config: JsonObject.default({}),
});

export const EvaluatorSpec = z.strictObject({
  /** A built-in name (`session_completed`, `test_on_output`, `swe_patch`) or a module path. */
  strategy: z.string().min(1).default("session_completed"),
  config: JsonObject.default({}),
});

/** Strict at every level: a misspelt key is an error naming it, never silently dropped. */
/**
 * The task's text for the agent. Every harness CLI takes it as a command-line argument, and one
 * that starts with "-" is read as a flag there (`--version` makes Codex print its version instead
 * of working; other flags change what the harness may do), so a task may not start with one.
 */
export const Instruction = z.string().refine((s) => !s.startsWith("-"), {
  message:
    'must not start with "-": harnesses take the instruction as a command-line argument and would read it as a flag (start it with a word or a space)',
});

export const TaskRequest = z.strictObject({
  task_id: Id,
  instruction: Instruction,
  num_samples: z.number().int().min(1).max(10_000).default(1),
  timeout_seconds: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .default(1800),
  agent: AgentSpec,
  runtime: RuntimeSpec.default(() => RuntimeSpec.parse({})),
  builder: BuilderSpec.default(() => BuilderSpec.parse({})),
  evaluator: EvaluatorSpec.default(() => EvaluatorSpec.parse({})),
  /**
   * Work-dir paths (files or dirs, relative) kept with the session's outputs after the run, as
   * `artifacts/{task}/{session}/{attempt}/workdir/{path}` (a Harbor task's `artifacts`).
   */
  artifacts: z
    .array(
      z
        .string()
        .min(1)
        .refine((p) => !p.startsWith("/") && !p.split("/").includes(".."), {
          message: "an artifact path is relative to the work dir and must not contain '..'",
        }),
    )
    .optional(),
  /** Completion notice is POSTed here when the task's last session is terminal. */
  callback_url: z.string().url().optional(),
  metadata: JsonObject.default({}),
});
export type TaskRequest = z.infer<typeof TaskRequest>;
/** What a user writes: defaults not yet applied. */
export type TaskRequestInput = z.input<typeof TaskRequest>;

/** `tasks/{task_id}.json`: the request as submitted plus the submit time. */
export const StoredTask = TaskRequest.extend({ submitted_at: z.string() });
export type StoredTask = z.infer<typeof StoredTask>;

/** One queue message: run sample `sample_index` of a task. */
export const SessionJob = z.object({
  v: z.literal(1).default(1),
  task_id: Id,
  session_id: Id,
  sample_index: z.number().int().nonnegative(),
  /** The full task travels with the job so a runner needs no store read to start INIT. */
  task: TaskRequest,
});
export type SessionJob = z.infer<typeof SessionJob>;
