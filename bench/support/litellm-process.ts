// LiteLLM's proxy as a benchmark peer (scripts/setup-litellm.sh installs it in .venv-litellm).
// It must not reach the network: offline mode, the bundled cost map and beta headers, telemetry
// off, and every outbound proxy variable pointed at a closed local port, so a fetch it still tried
// would fail instead of leaving the machine. `startLiteLlm` resolves null (with the reason) when
// the venv is missing.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Child, freePort, startChild } from "./children.ts";

const root = new URL("../..", import.meta.url).pathname;
export const LITELLM_BIN = join(root, ".venv-litellm", "bin", "litellm");

export const LITELLM_OFFLINE_ENV = {
  LITELLM_OFFLINE_MODE: "true",
  LITELLM_LOCAL_MODEL_COST_MAP: "True",
  LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS: "true",
  LITELLM_TELEMETRY: "False",
  LITELLM_LOG: "ERROR",
  HTTP_PROXY: "http://127.0.0.1:9",
  HTTPS_PROXY: "http://127.0.0.1:9",
  http_proxy: "http://127.0.0.1:9",
  https_proxy: "http://127.0.0.1:9",
  NO_PROXY: "127.0.0.1,localhost",
  no_proxy: "127.0.0.1,localhost",
};

/** LiteLLM serving every model name the workloads use, forwarded to `upstream` (vLLM-shaped). */
export async function startLiteLlm(
  upstream: string,
  models: readonly string[],
): Promise<{ child: Child; url: string } | { skipped: string }> {
  if (!existsSync(LITELLM_BIN))
    return { skipped: `${LITELLM_BIN} is missing (run \`bash scripts/setup-litellm.sh\`)` };
  const dir = mkdtempSync(join(tmpdir(), "polar-bench-litellm-"));
  const config = join(dir, "config.yaml");
  // JSON is YAML: no YAML writer needed.
  writeFileSync(
    config,
    JSON.stringify({
      model_list: models.map((m) => ({
        model_name: m,
        litellm_params: { model: "hosted_vllm/policy", api_base: `${upstream}/v1`, api_key: "bench" },
      })),
      litellm_settings: { telemetry: false, drop_params: true, set_verbose: false },
      general_settings: {},
    }),
  );
  const port = await freePort();
  const child = await startChild(
    LITELLM_BIN,
    ["--config", config, "--host", "127.0.0.1", "--port", String(port), "--num_workers", "1"],
    {
      env: { ...process.env, ...LITELLM_OFFLINE_ENV },
      cwd: dir,
      ready: (line) => /Uvicorn running on|Application startup complete/.test(line),
      timeoutMs: 120_000,
    },
  );
  return { child, url: `http://127.0.0.1:${port}` };
}
