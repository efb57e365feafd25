import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CHROMIUM_ARGS } from "../../batch-runner/harness/browser-use.ts";
import type { PresetContext } from "../../batch-runner/harness/preset.ts";
import { COMPUTER_USE_PRESETS, presetFor } from "../../batch-runner/harness/registry.ts";
import { planTurn } from "../../dry-run-policy/plan-turn.ts";
import { AgentSpec, TaskRequest } from "../../shared/schemas/task.ts";

const preset = COMPUTER_USE_PRESETS.browser_use;
const TOKEN = "payload.signature";
const HOME = "/sessions/s1/home";

function ctx(over: Record<string, unknown> = {}): PresetContext {
  return {
    agent: AgentSpec.parse({ harness: "browser_use", model: "Qwen/Qwen3-VL-8B", ...over }),
    instruction: "Set the name. ```polar-script\nsay: x\n```",
    proxyUrl: "http://127.0.0.1:8787",
    sessionToken: TOKEN,
    homeDir: HOME,
    workDir: "/sessions/s1/work",
  };
}

function driverSettings(c: PresetContext): Record<string, unknown> {
  return JSON.parse(preset.configFiles(c)[".polar/browser-use/settings.json"] as string);
}

describe("browser_use preset", () => {
  it("is registered under its harness name, pinned, with Python 3.12", () => {
    expect(presetFor("browser_use")).toBe(preset);
    expect(preset.pipPackages).toEqual([`browser-use==${preset.version}`]);
    expect(preset.python).toBe("3.12");
    expect(preset.provider).toBe("openai_chat");
  });

  it("writes the driver and its settings under HOME, no token in either", () => {
    const files = preset.configFiles(ctx());
    expect(Object.keys(files).sort()).toEqual([
      ".polar/browser-use/driver.py",
      ".polar/browser-use/settings.json",
    ]);
    for (const text of Object.values(files)) expect(text).not.toContain(TOKEN);
    const settings = driverSettings(ctx());
    expect(settings).toMatchObject({
      model: "Qwen/Qwen3-VL-8B",
      base_url: "http://127.0.0.1:8787/v1",
      max_retries: 2,
      chromium: "/usr/lib/chromium/chromium",
      agent: { max_steps: 20, use_judge: false },
      browser: { args: CHROMIUM_ARGS },
      serve: null,
      start_url: null,
    });
    // The browser's profile and the agent's files live in the session's HOME, never the work dir.
    for (const key of ["profile_dir", "downloads_dir", "file_system_dir"]) {
      expect(String(settings[key]).startsWith(`${HOME}/`), key).toBe(true);
    }
  });

  it("keeps Chromium from resolving any host but the loopback", () => {
    const rules = CHROMIUM_ARGS.find((a) => a.startsWith("--host-resolver-rules="));
    expect(rules).toBe("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1");
  });

  it("fills {{polar_root}} in `serve` (shell-quoted) and keeps start_url", () => {
    const settings = driverSettings(
      ctx({
        settings: {
          serve: "node {{polar_root}}/examples/computer-use/app/server.mjs --port 8765",
          start_url: "http://127.0.0.1:8765/",
        },
      }),
    );
    expect(settings.serve).toMatch(/^node '\/.+'\/examples\/computer-use\/app\/server\.mjs --port 8765$/);
    expect(settings.start_url).toBe("http://127.0.0.1:8765/");
  });

  it("merges agent.settings.config over the driver's settings (arrays replaced)", () => {
    const settings = driverSettings(
      ctx({
        settings: {
          config: { agent: { max_steps: 3 }, browser: { args: ["--x"] }, llm: { temperature: 0 } },
        },
      }),
    );
    expect(settings.agent).toEqual({ max_steps: 3, use_judge: false });
    expect(settings.browser).toEqual({ args: ["--x"] });
    expect(settings.llm).toEqual({ temperature: 0 });
  });

  it("runs the venv's python on the driver with the key in the environment, telemetry and checks off", () => {
    const c = ctx({ env: { EXTRA: "1" } });
    const inv = preset.invocation(c, "/cache/bin");
    expect(inv.argv).toEqual([
      "/cache/bin/python",
      `${HOME}/.polar/browser-use/driver.py`,
      `${HOME}/.polar/browser-use/settings.json`,
      c.instruction,
    ]);
    expect(inv.stdin).toBe("");
    expect(inv.env).toMatchObject({
      HOME,
      POLAR_API_KEY: TOKEN,
      ANONYMIZED_TELEMETRY: "false",
      BROWSER_USE_CLOUD_SYNC: "false",
      BROWSER_USE_VERSION_CHECK: "false",
      BROWSER_USE_DISABLE_EXTENSIONS: "1",
      EXTRA: "1",
    });
  });

  it("refuses bad settings by name: unknown keys, a start_url that is not http(s)", () => {
    expect(() => preset.invocation(ctx({ settings: { serv: "x" } }), null)).toThrow(/serv/);
    expect(() => preset.configFiles(ctx({ settings: { start_url: "file:///etc/passwd" } }))).toThrow(
      /start_url/,
    );
    expect(() => preset.configFiles(ctx({ settings: { serve: "  " } }))).toThrow(/serve/);
  });

  it("is refused with MCP servers at validation (it has no MCP config)", () => {
    const task = {
      task_id: "t",
      instruction: "x",
      agent: { harness: "browser_use", mcp_servers: [{ name: "a", transport: "stdio", command: "x" }] },
    };
    const parsed = TaskRequest.safeParse(task);
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toMatch(/mcp_servers[\s\S]*browser_use/);
  });

  it("reads the driver's result line: done is a finished run, anything else is not", () => {
    const stdout = readFileSync(
      new URL("../fixtures/harness-output/browser_use.stdout.txt", import.meta.url),
      "utf8",
    );
    expect(preset.parseOutput(stdout, "", 0)).toEqual({
      finalAnswer: "The full name is Ada Lovelace.",
      success: true,
    });
    expect(preset.parseOutput(stdout, "", 1).success).toBe(false);
    expect(preset.parseOutput(stdout.slice(0, 40), "", null)).toEqual({ finalAnswer: null, success: false });
    const notDone =
      '{"polar_result": {"done": false, "success": null, "answer": null, "steps": 20, "errors": []}}';
    expect(preset.parseOutput(notDone, "", 0)).toEqual({ finalAnswer: null, success: false });
  });
});

describe("the dry-run policy on browser-use's calls", () => {
  // A state message as browser-use 0.13 sent it (the screenshot replaced by a stub PNG): the
  // script in <user_request>, the page's indexed elements, <step_info>Step1.
  const state = JSON.parse(
    readFileSync(new URL("../fixtures/browser-use/state-message.json", import.meta.url), "utf8"),
  );
  const system = { role: "system", content: "You are an AI agent designed to operate in an iterative loop" };
  const atStep = (n: number) => ({
    ...state,
    content: state.content.map((p: { type: string; text?: string }) =>
      p.type === "text" ? { ...p, text: p.text?.replace("<step_info>Step1 ", `<step_info>Step${n} `) } : p,
    ),
  });

  it("takes the turn from the step number (no assistant message is ever sent)", () => {
    const first = JSON.parse(planTurn({ messages: [system, atStep(1)] }).content);
    expect(first.action.map((a: object) => Object.keys(a)[0])).toEqual(["input", "click"]);
    const second = JSON.parse(planTurn({ messages: [system, atStep(2)] }).content);
    expect(second.action).toEqual([{ done: { text: "The full name is Ada Lovelace.", success: true } }]);
  });

  it("fills {{element:...}} with the element's number in this call's listing", () => {
    const answer = JSON.parse(planTurn({ messages: [system, atStep(1)] }).content);
    expect(answer.action).toEqual([{ input: { index: 2, text: "Ada Lovelace" } }, { click: { index: 5 } }]);
    // Another run numbers the same page differently; the answer follows.
    const renumbered = {
      ...state,
      content: state.content.map((p: { type: string; text?: string }) =>
        p.type === "text" ? { ...p, text: p.text?.replace("[2]<input type=text", "[7]<input type=text") } : p,
      ),
    };
    const again = JSON.parse(planTurn({ messages: [system, renumbered] }).content);
    expect(again.action[0]).toEqual({ input: { index: 7, text: "Ada Lovelace" } });
  });

  it("says which element it could not find", () => {
    const gone = {
      ...state,
      content: state.content.map((p: { type: string; text?: string }) =>
        p.type === "text" ? { ...p, text: p.text?.replace("[5]<button id=save />", "<button />") } : p,
      ),
    };
    expect(planTurn({ messages: [system, gone] }).content).toBe(
      "polar-script: no element on the page matches {{element:id=save}}",
    );
  });
});
