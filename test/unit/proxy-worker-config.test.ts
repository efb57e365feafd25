import { describe, expect, it } from "vitest";
import { depsFromEnv } from "../../proxy-worker/worker-config.ts";

/** The Worker's vars and secrets for issue 12: limits, store deadline, separate control credential. */
const bucket = {
  put: async () => null,
  get: async () => null,
  list: async () => ({ objects: [], truncated: false }),
  delete: async () => {},
};
const base = {
  UPSTREAM_URL: "http://127.0.0.1:8000",
  POLAR_SIGNING_KEY: "k",
  CAPTURES: bucket,
  JOBS_QUEUE_URL: "http://127.0.0.1:9324/000000000000/jobs",
  AWS_ACCESS_KEY_ID: "id",
  AWS_SECRET_ACCESS_KEY: "secret",
};

describe("Worker configuration (issue 12)", () => {
  it("defaults: 30 s body, 10 s idle, depth 128", () => {
    const deps = depsFromEnv({ ...base, POLAR_ADMIN_TOKEN: "adm" }, fetch);
    expect(deps.limits).toMatchObject({
      bodyTimeoutMs: 30_000,
      bodyIdleTimeoutMs: 10_000,
      maxJsonDepth: 128,
    });
  });

  it("reads BODY_TIMEOUT_S, BODY_IDLE_TIMEOUT_S and MAX_JSON_DEPTH, and refuses nonsense", () => {
    const deps = depsFromEnv(
      { ...base, BODY_TIMEOUT_S: "5", BODY_IDLE_TIMEOUT_S: "1.5", MAX_JSON_DEPTH: "32" },
      fetch,
    );
    expect(deps.limits).toMatchObject({ bodyTimeoutMs: 5000, bodyIdleTimeoutMs: 1500, maxJsonDepth: 32 });
    expect(() => depsFromEnv({ ...base, MAX_JSON_DEPTH: "-1" }, fetch)).toThrow(/MAX_JSON_DEPTH/);
    expect(() => depsFromEnv({ ...base, STORE_TIMEOUT_S: "0" }, fetch)).toThrow(/STORE_TIMEOUT_S/);
  });

  it("reads the image limits (issue 49) and refuses nonsense", () => {
    const deps = depsFromEnv(
      {
        ...base,
        MAX_IMAGE_PIXELS: "1000000",
        MAX_IMAGES_PER_CALL: "8",
        MAX_SESSION_IMAGES: "50",
        MAX_SESSION_IMAGE_MB: "2",
      },
      fetch,
    );
    expect(deps.limits).toMatchObject({
      maxImagePixels: 1_000_000,
      maxImagesPerCall: 8,
      maxSessionImages: 50,
      maxSessionImageBytes: 2 * 1048576,
    });
    expect(() => depsFromEnv({ ...base, MAX_IMAGES_PER_CALL: "0" }, fetch)).toThrow(/MAX_IMAGES_PER_CALL/);
    expect(() => depsFromEnv({ ...base, MAX_IMAGE_PIXELS: "1.5" }, fetch)).toThrow(/MAX_IMAGE_PIXELS/);
  });

  it("turns the control API on with POLAR_CONTROL_TOKEN alone, kept apart from the admin token", () => {
    const onlyControl = depsFromEnv({ ...base, POLAR_CONTROL_TOKEN: "ctl-a,ctl-b" }, fetch);
    expect(onlyControl.control).toMatchObject({ controlToken: "ctl-a,ctl-b" });
    expect(onlyControl.adminToken).toBeUndefined();
    const both = depsFromEnv({ ...base, POLAR_CONTROL_TOKEN: "ctl", POLAR_ADMIN_TOKEN: "adm" }, fetch);
    expect(both.control).toMatchObject({ controlToken: "ctl" });
    expect(both.adminToken).toBe("adm");
    expect(depsFromEnv(base, fetch).control).toBeUndefined();
  });
});
