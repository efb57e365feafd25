import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// `npm ci` refuses a lock that lacks an optional dependency, even another platform's binary;
// `node scripts/complete-lockfile.ts` restores the ones the registry mirror could not provide.
describe("package-lock.json", () => {
  it("records every optional dependency, so `npm ci` accepts it on a fresh machine", () => {
    const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8")) as {
      packages: Record<string, { optionalDependencies?: Record<string, string> }>;
    };
    const missing: string[] = [];
    for (const [key, entry] of Object.entries(lock.packages)) {
      for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
        const nested = key === "" ? `node_modules/${dep}` : `${key}/node_modules/${dep}`;
        if (!lock.packages[nested] && !lock.packages[`node_modules/${dep}`])
          missing.push(`${key || "(root)"} -> ${dep}`);
      }
    }
    expect(missing, "run `node scripts/complete-lockfile.ts`").toEqual([]);
  });
});
