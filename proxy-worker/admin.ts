import type { Hono } from "hono";
import { z } from "zod";

/**
 * The policy version the proxy stamps on captures when the engine reports none. In Workers it lives
 * in one isolate's memory, so there a request header (`x-polar-policy-version`) is the reliable way.
 */
export interface PolicyVersionSource {
  get(): string | null;
  set(version: string): void;
}

export function memoryPolicyVersion(initial: string | null = null): PolicyVersionSource {
  let current = initial;
  return {
    get: () => current,
    set: (v) => {
      current = v;
    },
  };
}

const PolicyVersionBody = z.object({
  version: z.union([z.string().min(1).max(200), z.number().int().nonnegative()]).transform(String),
});

/** `POST /admin/policy-version {version}`: the trainer announces a weight sync. Guarded by the admin token. */
export function mountAdmin(app: Hono, source: PolicyVersionSource, adminToken: string | undefined): void {
  app.all("/admin/*", async (c, next) => {
    if (!adminToken) {
      return c.json(
        {
          error: {
            message: "admin endpoints are disabled: start the proxy with --admin-token or POLAR_ADMIN_TOKEN",
          },
        },
        404,
      );
    }
    const given =
      c.req.header("x-admin-token") ?? /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (!given || !(await sameSecret(given.trim(), adminToken))) {
      return c.json(
        { error: { message: "missing or wrong admin token (Authorization: Bearer <token>)" } },
        401,
      );
    }
    await next();
  });
  app.get("/admin/policy-version", (c) => c.json({ version: source.get() }));
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
        { error: { message: 'body must be {"version": string (1-200 chars) or non-negative integer}' } },
        400,
      );
    }
    source.set(parsed.data.version);
    return c.json({ version: parsed.data.version });
  });
}

/** Compares digests so the time taken does not reveal how much of the token matched. */
export async function sameSecret(a: string, b: string): Promise<boolean> {
  const enc = new TextEncoder();
  const [x, y] = await Promise.all([
    crypto.subtle.digest("SHA-256", enc.encode(a)),
    crypto.subtle.digest("SHA-256", enc.encode(b)),
  ]);
  const u = new Uint8Array(x);
  const v = new Uint8Array(y);
  let diff = 0;
  for (let i = 0; i < u.length; i++) diff |= u[i] ^ v[i];
  return diff === 0;
}
