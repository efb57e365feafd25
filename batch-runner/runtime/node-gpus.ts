import { readdirSync } from "node:fs";

/**
 * The GPUs this node can give a container: `POLAR_NODE_GPUS` when the operator sets it (a CDI or
 * vendor setup this count cannot see), else the NVIDIA device nodes `/dev/nvidia<N>`. A task asking
 * for more is refused at INIT with this count, never left to an engine that might start it without
 * them or wait for devices that never come.
 */
export function nodeGpus(env: NodeJS.ProcessEnv = process.env, devDir = "/dev"): number {
  const set = env.POLAR_NODE_GPUS?.trim();
  if (set) {
    const n = Number(set);
    if (!Number.isInteger(n) || n < 0)
      throw new Error(`POLAR_NODE_GPUS: ${JSON.stringify(set)} is not a GPU count`);
    return n;
  }
  try {
    return readdirSync(devDir).filter((name) => /^nvidia\d+$/.test(name)).length;
  } catch {
    return 0;
  }
}

/** Whether a container engine can give `requested` GPUs here (true), or why not. */
export function gpuSupport(requested: number | undefined, have: number = nodeGpus()): true | string {
  if (!requested || requested <= have) return true;
  return `the task asks for ${requested} GPU${requested === 1 ? "" : "s"} and this node has ${have} (/dev/nvidia<N> devices; POLAR_NODE_GPUS sets the count)`;
}
