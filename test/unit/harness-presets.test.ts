import { describe, expect, it } from "vitest";
import type { PresetContext } from "../../batch-runner/harness/preset.ts";
import { CLI_PRESETS, COMPUTER_USE_PRESETS, presetFor } from "../../batch-runner/harness/registry.ts";
import { AgentSpec, HARNESSES } from "../../shared/schemas/task.ts";

const TOKEN = "payload.signature";

function ctx(harness: string, over: Record<string, unknown> = {}): PresetContext {
  return {
    agent: AgentSpec.parse({ harness, model: "policy-7b", ...over }),
    instruction: "make hello.txt",
    proxyUrl: "http://127.0.0.1:8787",
    sessionToken: TOKEN,
    homeDir: "/sessions/s1/home",
    workDir: "/sessions/s1/work",
  };
}

/** Every config file a preset writes must parse in its own format. */
function parseConfig(path: string, text: string): unknown {
  if (path.endsWith(".json")) return JSON.parse(text);
  if (path.endsWith(".toml")) return text; // checked by the TOML writer's own test
  if (path.endsWith(".yaml")) return JSON.parse(text); // written as JSON, which YAML reads
  if (path.endsWith(".py")) return text; // a Python harness's driver script, shipped as is
  if (path.endsWith("/.polar-keep") && text === "") return text; // only creates its directory
  throw new Error(`unexpected config file ${path}`);
}

const OFFLINE_ENV: Record<string, Record<string, string>> = {
  claude_code: { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" },
  codex: {},
  gemini_cli: { GEMINI_TELEMETRY_ENABLED: "false" },
  qwen_code: {},
  opencode: { OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1" },
  pi: { PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1" },
  mini_swe_agent: { LITELLM_LOCAL_MODEL_COST_MAP: "True", MSWEA_CONFIGURED: "true" },
  hermes: { HERMES_HOME: "/sessions/s1/home/.hermes", HERMES_DISABLE_LAZY_INSTALLS: "1" },
  openhands_sdk: { LITELLM_LOCAL_MODEL_COST_MAP: "True" },
  cline: { CLINE_DIR: "/sessions/s1/home/.cline", E2E_TEST: "true", CLINE_SESSION_BACKEND_MODE: "local" },
};

describe.each(Object.entries(CLI_PRESETS))("%s preset", (name, preset) => {
  it("pins a package and version and names itself after its harness", () => {
    expect(preset.name).toBe(name);
    expect(preset.version).toMatch(/^\d+\.\d+\.\d+$/);
    if (preset.pipPackages) {
      // A Python harness: every requirement pinned exactly, its own package at the preset's version.
      expect(preset.npmPackage).toBeNull();
      for (const req of preset.pipPackages) expect(req).toMatch(/^[a-z0-9-]+==\d+(\.\d+)+$/);
      expect(preset.pipPackages[0]).toMatch(new RegExp(`==${preset.version}$`));
    } else {
      expect(preset.npmPackage).toMatch(/^(@[a-z0-9-]+\/)?[a-z0-9-]+$/);
    }
  });

  it("writes parseable config files under HOME", () => {
    const files = preset.configFiles(ctx(name));
    expect(Object.keys(files).length).toBeGreaterThan(0);
    for (const [path, text] of Object.entries(files)) {
      expect(path.startsWith("/")).toBe(false);
      expect(() => parseConfig(path, text)).not.toThrow();
      // The session token never lands in a file (it is read from the environment).
      expect(text).not.toContain(TOKEN);
    }
  });

  it("points the CLI at the proxy with the session token as its key", () => {
    const c = ctx(name);
    const inv = preset.invocation(c, "/cache/bin");
    expect(inv.argv[0]?.startsWith("/cache/bin/")).toBe(true);
    // OpenCode takes it on stdin: `opencode run` re-quotes a message argument (opencode.ts).
    if (name === "opencode") {
      expect(inv.argv).not.toContain(c.instruction);
      expect(inv.stdin).toBe(c.instruction);
    } else {
      expect(inv.argv).toContain(c.instruction);
      expect(inv.stdin).toBe("");
    }
    expect(Object.values(inv.env)).toContain(TOKEN);
    expect(inv.env.HOME).toBe(c.homeDir);
    const everything = JSON.stringify([inv.env, preset.configFiles(c)]);
    expect(everything).toContain("http://127.0.0.1:8787");
    expect(everything).toContain("policy-7b");
    expect(inv.env).toMatchObject(OFFLINE_ENV[name] ?? {});
  });

  it("lets agent.env override defaults and agent.settings add args", () => {
    const c = ctx(name, { env: { HOME: "/elsewhere", EXTRA: "1" }, settings: { extra_args: ["--x"] } });
    const inv = preset.invocation(c, null);
    expect(inv.env.HOME).toBe("/elsewhere");
    expect(inv.env.EXTRA).toBe("1");
    expect(inv.argv).toContain("--x");
  });

  it("merges agent.settings.config into its config file", () => {
    const files = preset.configFiles(ctx(name, { settings: { config: { polar_probe: { a: 1 } } } }));
    expect(Object.values(files).join("\n")).toMatch(/polar_probe/);
  });

  it("rejects an unknown setting, naming it", () => {
    expect(() => preset.invocation(ctx(name, { settings: { extra_arg: ["--x"] } }), null)).toThrow(
      /agent\.settings for harness "[a-z_]+"[\s\S]*extra_arg/,
    );
    expect(() => preset.configFiles(ctx(name, { settings: { max_retries: -1 } }))).toThrow(/max_retries/);
  });
});

describe("preset specifics", () => {
  it("codex writes a Responses provider with retries from settings", () => {
    const toml = CLI_PRESETS.codex.configFiles(ctx("codex", { settings: { max_retries: 0 } }))[
      ".codex/config.toml"
    ];
    expect(toml).toContain('model_provider = "polar"');
    expect(toml).toContain('base_url = "http://127.0.0.1:8787/v1"');
    expect(toml).toContain('wire_api = "responses"');
    expect(toml).toContain("request_max_retries = 0");
    expect(toml).toMatch(/\[analytics\]\nenabled = false/);
  });

  it("gemini counts attempts (retries + 1) and selects API-key auth", () => {
    const files = CLI_PRESETS.gemini_cli.configFiles(ctx("gemini_cli", { settings: { max_retries: 0 } }));
    const settings = JSON.parse(files[".gemini/settings.json"] ?? "{}");
    expect(settings.general.maxAttempts).toBe(1);
    expect(settings.security.auth.selectedType).toBe("gemini-api-key");
  });

  it("opencode skips the title call unless title is null", () => {
    const withTitle = CLI_PRESETS.opencode.invocation(ctx("opencode"), null).argv;
    expect(withTitle).toContain("--title");
    const without = CLI_PRESETS.opencode.invocation(ctx("opencode", { settings: { title: null } }), null);
    expect(without.argv).not.toContain("--title");
  });

  it("mini_swe_agent reads the driver's result line: how the agent ended, or a failure", () => {
    const preset = CLI_PRESETS.mini_swe_agent;
    const ok = 'log\n{"polar_result": {"exit_status": "Submitted", "submission": "Done.\\n"}}\n';
    expect(preset.parseOutput(ok, "", 0)).toEqual({ finalAnswer: "Done.", success: true });
    // Out of steps or of well-formed actions: the policy's outcome, for the judge to score.
    for (const ended of ["LimitsExceeded", "RepeatedFormatError"]) {
      const out = `{"polar_result": {"exit_status": "${ended}", "submission": ""}}`;
      expect(preset.parseOutput(out, "", 0)).toEqual({ finalAnswer: null, success: true });
    }
    const crashed = '{"polar_result": {"exit_status": "APIConnectionError", "submission": ""}}';
    expect(preset.parseOutput(crashed, "", 1)).toEqual({ finalAnswer: null, success: false });
    expect(preset.parseOutput("Traceback ...", "", 1)).toEqual({ finalAnswer: null, success: false });
  });

  it("hermes names the proxy as its only provider, with a context window it accepts", () => {
    const files = CLI_PRESETS.hermes.configFiles(ctx("hermes", { settings: { max_retries: 0 } }));
    const config = JSON.parse(files[".hermes/config.yaml"] ?? "{}");
    expect(config.model).toMatchObject({ provider: "custom:polar", default: "policy-7b" });
    expect(config.model.context_length).toBeGreaterThanOrEqual(64_000);
    expect(config.providers.polar).toMatchObject({
      base_url: "http://127.0.0.1:8787/v1",
      key_env: "POLAR_API_KEY",
    });
    expect(config.agent.api_max_retries).toBe(0);
    // Else its TTS tool pip-installs edge-tts from the package index into the shared venv at start.
    expect(config.security.allow_lazy_installs).toBe(false);
  });

  it("cline names the proxy as its provider, with telemetry and auto-update off", () => {
    const files = CLI_PRESETS.cline.configFiles(ctx("cline"));
    const providers = JSON.parse(files[".cline/data/settings/providers.json"] ?? "{}");
    expect(providers.lastUsedProvider).toBe("openai-compatible");
    expect(providers.providers["openai-compatible"].settings).toMatchObject({
      baseUrl: "http://127.0.0.1:8787/v1",
      model: "policy-7b",
    });
    const global = JSON.parse(files[".cline/data/settings/global-settings.json"] ?? "{}");
    expect(global).toEqual({ telemetryOptOut: true, autoUpdateEnabled: false });
    // A `-k` on the command line makes it drop the stored base URL and call its vendor's host.
    expect(CLI_PRESETS.cline.invocation(ctx("cline"), null).argv).not.toContain("-k");
  });

  it("parses each preset's own output format", () => {
    const claude = '{"type":"result","subtype":"success","is_error":false,"result":"ok"}';
    expect(CLI_PRESETS.claude_code.parseOutput(claude, "", 0).finalAnswer).toBe("ok");
    expect(CLI_PRESETS.gemini_cli.parseOutput('{"response":"ok"}', "", 0).finalAnswer).toBe("ok");
  });
});

describe("agent.harness", () => {
  it("every non-shell harness name has a preset, registered for the runner", () => {
    const installed = { ...CLI_PRESETS, ...COMPUTER_USE_PRESETS };
    expect(Object.keys(installed).sort()).toEqual(HARNESSES.filter((h) => h !== "shell").sort());
    for (const [name, preset] of Object.entries(installed)) expect(presetFor(name)).toBe(preset);
  });

  it("an unknown name is a validation error listing the valid ones", () => {
    const parsed = AgentSpec.safeParse({ harness: "cursor" });
    expect(parsed.success).toBe(false);
    const message = JSON.stringify(parsed.error?.issues);
    for (const name of HARNESSES) expect(message).toContain(name);
  });
});
