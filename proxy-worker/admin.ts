import type { Hono } from "hono";
import { z } from "zod";
import { type CredentialList, matchesAny, presentedCredential } from "./credentials.ts";
import { markAuthenticated } from "./fair-share/address-gate.ts";

export { sameSecret } from "./credentials.ts";

/**
 * The policy version the proxy stamps on captures when the engine reports none. In Workers it lives
 * in one isolate's memory, so there a request header (`x-polar-policy-version`, honoured only with
 * the admin credential in `x-admin-token`) is the reliable way.
 */
export interface PolicyVersionSource {
  get(): string | null;
  /** `by`: who named it (default `proxy`: a flag, the admin route); captures record it. */
  set(version: string, by?: VersionSetter): void;
  /** Who named the current version; a source without it is taken as `proxy`. */
  setBy?(): VersionSetter;
}

/** `trainer`: set through the control API (`PUT /v1/policy-version`); `proxy`: a flag or `/admin`. */
export type VersionSetter = "proxy" | "trainer";

export function memoryPolicyVersion(initial: string | null = null): PolicyVersionSource {
  let current = initial;
  let setter: VersionSetter = "proxy";
  return {
    get: () => current,
    set: (v, by = "proxy") => {
      current = v;
      setter = by;
    },
    setBy: () => setter,
  };
}

export const MAX_POLICY_VERSION_CHARS = 200;

/** A version label: 1-200 characters, none of them control characters. */
export const PolicyVersionText = z
  .string()
  .min(1)
  .max(MAX_POLICY_VERSION_CHARS)
  .regex(/^[^\u0000-\u001f\u007f]+$/, "must not contain control characters");

const PolicyVersionBody = z.object({
  version: z.union([PolicyVersionText, z.number().int().nonnegative()]).transform(String),
});

/** Where the version lives when the control API keeps it in the store for every proxy (control/shared-state.ts). */
export interface StoredPolicyVersion {
  refresh(): Promise<void>;
  saveVersion(version: string, by: VersionSetter): Promise<void>;
}

/** `POST /admin/policy-version {version}`: the trainer announces a weight sync. Guarded by the admin credential. */
export function mountAdmin(
  app: Hono,
  source: PolicyVersionSource,
  adminTokens: CredentialList,
  stored: StoredPolicyVersion | null = null,
): void {
  app.all("/admin/*", async (c, next) => {
    if (adminTokens.length === 0) {
      return c.json(
        {
          error: {
            message: "admin endpoints are disabled: start the proxy with --admin-token or POLAR_ADMIN_TOKEN",
          },
        },
        404,
      );
    }
    if (!(await matchesAny(presentedCredential(c.req.raw.headers), adminTokens))) {
      return c.json(
        { error: { message: "missing or wrong admin token (Authorization: Bearer <token>)" } },
        401,
      );
    }
    markAuthenticated(c.req.raw);
    await next();
  });
  app.get("/admin/policy-version", async (c) => {
    const failed = await attempt(() => stored?.refresh());
    if (failed) return c.json({ error: { message: failed } }, 503);
    return c.json({ version: source.get() });
  });
  app.post("/admin/policy-version", async (c) => {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch {
      return c.json({ error: { message: 'body must be JSON: {"version": "..."}' } }, 400);
    }
    const parsed = PolicyVersionBody.safeParse(raw);
    if (!parsed.success) {
      return c.json(
        {
          error: {
            message: `body must be {"version": string (1-${MAX_POLICY_VERSION_CHARS} chars, no control characters) or non-negative integer}`,
          },
        },
        400,
      );
    }
    // With the control API on, every proxy on the store takes it (the way to start a run over).
    const failed = await attempt(async () => {
      if (stored) await stored.saveVersion(parsed.data.version, "proxy");
      else source.set(parsed.data.version);
    });
    if (failed) return c.json({ error: { message: failed } }, 503);
    return c.json({ version: parsed.data.version });
  });
}

/** Null when `fn` succeeded; else its message (the store could not be read or written). */
async function attempt(fn: () => Promise<void> | undefined): Promise<string | null> {
  try {
    await fn();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
