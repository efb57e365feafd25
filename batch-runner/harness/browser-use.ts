import { BrowserUseSettings } from "../../shared/schemas/task-settings.ts";
import type { HarnessOutcome, HarnessPreset, PresetContext } from "./preset.ts";
import { deepMerge, joinPath, openAiBaseUrl, parseSettings, prettyJson } from "./preset-options.ts";
import { driverInvocation, driverResult, driverSource } from "./python-driver.ts";
import { renderCommand } from "./shell.ts";

/*
 * browser-use (PyPI `browser-use`), a computer-use agent: it drives a real Chromium over CDP and
 * asks the model for its next actions with a screenshot of the page (an image part) and the page's
 * indexed elements in every call. The preset runs python/browser_use_driver.py, which points
 * browser-use's ChatOpenAI at the proxy (OpenAI Chat Completions, structured JSON output) and
 * launches the system's Chromium headless with its profile under HOME. A task's web app starts
 * from `agent.settings.serve` inside the same sandbox, so the browser reaches it on 127.0.0.1.
 */

const DIR = ".polar/browser-use";
const DRIVER = `${DIR}/driver.py`;
const SETTINGS = `${DIR}/settings.json`;
/** Where browser-use keeps the files its agent writes (its `write_file` action), kept as an artifact. */
const FILE_SYSTEM = `${DIR}/files`;
const DRIVER_SOURCE = driverSource("browser_use_driver.py");

/**
 * Debian's Chromium binary (the sandbox binds /usr read-only, so the host's path is the sandbox's),
 * not its /usr/bin/chromium launcher, which sources /etc/chromium.d, a dir the sandbox lacks.
 */
export const DEFAULT_CHROMIUM = "/usr/lib/chromium/chromium";

/**
 * Chromium's own traffic, off: it resolves no host name but the loopback's (its component
 * updater, search-engine and extension-update fetches looked up clients2.google.com,
 * update.googleapis.com, redirector.gvt1.com and start.duckduckgo.com at every start; the sandbox
 * has no route for them, and now they are not even asked for). A task's `config.browser.args`
 * replaces this list.
 */
export const CHROMIUM_ARGS = [
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-domain-reliability",
  "--dns-prefetch-disable",
  "--no-pings",
  "--disable-dev-shm-usage",
  "--no-first-run",
];

function settingsOf(ctx: PresetContext): BrowserUseSettings {
  return parseSettings("browser_use", BrowserUseSettings, ctx.agent.settings);
}

/**
 * The driver's settings; `agent.settings.config` merges over them (`agent`: browser-use Agent
 * arguments such as `max_steps` or `use_vision`; `llm`: ChatOpenAI fields; `browser`: BrowserProfile
 * fields; `chromium`: the browser binary).
 */
export function browserUseSettings(ctx: PresetContext): Record<string, unknown> {
  const settings = settingsOf(ctx);
  const base = {
    model: ctx.agent.model,
    base_url: openAiBaseUrl(ctx.proxyUrl),
    max_retries: settings.max_retries,
    chromium: DEFAULT_CHROMIUM,
    profile_dir: joinPath(ctx.homeDir, DIR, "profile"),
    downloads_dir: joinPath(ctx.homeDir, DIR, "downloads"),
    file_system_dir: joinPath(ctx.homeDir, FILE_SYSTEM),
    serve: settings.serve === undefined ? null : renderCommand(settings.serve, ctx),
    start_url: settings.start_url ?? null,
    app_ready_seconds: settings.app_ready_seconds,
    // "xvfb": a window on a virtual X display started in the sandbox (Debian's `xvfb`), not headless.
    display: "headless",
    screen: "1280x800x24",
    agent: {
      max_steps: 20,
      // Its judge is one more model call after the episode, grading the agent's own claim; the
      // task's evaluator gives the reward.
      use_judge: false,
    },
    llm: {},
    browser: { args: CHROMIUM_ARGS },
  };
  return deepMerge(base, settings.config);
}

/** The driver's last stdout line: `{"polar_result": {"done", "success", "answer", "steps", "errors"}}`. */
export function parseBrowserUseOutput(stdout: string, exitCode: number | null): HarnessOutcome {
  const result = driverResult(stdout);
  const answer = typeof result?.answer === "string" ? result.answer.trim() : "";
  // Finished means `done` (the agent's own verdict on the task is in its answer, not here: the
  // evaluator scores the task); out of steps or failures is a run that did not finish.
  return { finalAnswer: answer || null, success: exitCode === 0 && result?.done === true };
}

export const browserUse: HarnessPreset = {
  name: "browser_use",
  npmPackage: null,
  version: "0.13.14",
  pipPackages: ["browser-use==0.13.14"],
  // browser-use requires Python >= 3.11.
  python: "3.12",
  provider: "openai_chat",

  configFiles(ctx) {
    return {
      [DRIVER]: DRIVER_SOURCE,
      [SETTINGS]: prettyJson(browserUseSettings(ctx)),
    };
  },

  invocation(ctx, binDir) {
    const files = { driver: DRIVER, settings: SETTINGS };
    return driverInvocation(ctx, binDir, files, settingsOf(ctx).extra_args, {
      ANONYMIZED_TELEMETRY: "false",
      BROWSER_USE_CLOUD_SYNC: "false",
      BROWSER_USE_VERSION_CHECK: "false",
      BROWSER_USE_DISABLE_EXTENSIONS: "1",
      BROWSER_USE_CALCULATE_COST: "false",
      BROWSER_USE_CONFIG_DIR: joinPath(ctx.homeDir, ".config/browseruse"),
      // Its first-start banner and colours only clutter the kept stdout.
      NO_COLOR: "1",
    });
  },

  parseOutput(stdout, _stderr, exitCode) {
    return parseBrowserUseOutput(stdout, exitCode);
  },

  artifacts: [FILE_SYSTEM],
};
