/**
 * Before any session starts: is the inference server there? A closed port or a wrong host would
 * otherwise turn every session into an ERROR after its harness was set up. Any HTTP answer counts
 * (the server may want a key for /v1/models); no answer within `timeoutMs` is a refusal.
 */
export async function checkUpstream(upstream: string, timeoutMs = 3000): Promise<void> {
  const url = `${upstream.replace(/\/+$/, "")}/v1/models`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why =
      e.name === "TimeoutError"
        ? `no answer within ${timeoutMs / 1000}s`
        : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new Error(
      `the upstream ${upstream} is not reachable (GET ${url}: ${why}); start the inference server ` +
        "or fix --upstream (without --upstream, the dry-run policy is used)",
    );
  }
}
