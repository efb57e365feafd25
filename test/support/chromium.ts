import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";

/** Debian's `chromium` (`.ci/run` installs it); POLAR_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.POLAR_CHROMIUM ?? "/usr/bin/chromium";

/** Why the browser tests cannot run here, or null when they can (it must start, not only exist). */
export function chromiumMissing(path = CHROMIUM): string | null {
  return existsSync(path) && spawnSync(path, ["--version"]).status === 0
    ? null
    : `no Chromium at ${path} (apt-get install chromium${path === CHROMIUM ? ", or set POLAR_CHROMIUM" : ""})`;
}

/** Headless Chromium with a fresh profile, no network of its own (no updates, sync or QUIC). */
export async function launchChromium(
  viewport = { width: 1280, height: 900 },
  httpCredentials?: { username: string; password: string },
): Promise<BrowserContext> {
  const { chromium } = await import("playwright-core");
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "polar-chromium-")), {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    httpCredentials,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
