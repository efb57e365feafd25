import { describe, expect, it } from "vitest";
import type { ContainerEngine } from "../../batch-runner/runtime/container-engine.ts";
import { checkedBases } from "../../batch-runner/runtime/image-build-bases.ts";
import type { ExecResult } from "../../batch-runner/runtime/runtime.ts";

// The engine's answers are given here (docker's `image inspect`): what the runner does with an
// answer it cannot read is the case, and no engine gives one on demand.
const DOCKER: ContainerEngine = { bin: "docker", kind: "docker", globalFlags: [], runFlags: [] };
const ID = "a".repeat(64);

function answer(stdout: string, stderr = ""): ExecResult {
  return { exitCode: 0, signal: null, timedOut: false, stdout, stderr, durationMs: 1 };
}

function engineAnswering(onbuild: ExecResult) {
  return async (args: string[]): Promise<ExecResult> =>
    args.includes("{{.Id}}") ? answer(`sha256:${ID}\n`) : onbuild;
}

describe("a base image's ONBUILD triggers", () => {
  it("are read from the engine's JSON: with none, the Dockerfile goes on as written", async () => {
    const dockerfile = await checkedBases(
      DOCKER,
      engineAnswering(answer("null\n")),
      "FROM base:1\n",
      "t",
      1000,
    );
    expect(dockerfile).toBe("FROM base:1\n");
  });

  it("that the engine answers as no JSON refuse the build, showing what was read", async () => {
    const garbled = answer('[{"Docker": {"con', "WARN[0000] storage is being modified\n");
    await expect(checkedBases(DOCKER, engineAnswering(garbled), "FROM base:1\n", "t", 1000)).rejects.toThrow(
      /ONBUILD triggers could not be read \(not JSON: .*\):\n\[\{"Docker": \{"con\nWARN\[0000\] storage is being modified/s,
    );
  });

  it("that the engine lists with a refused RUN --mount refuse the build", async () => {
    const triggers = answer(
      JSON.stringify(["RUN --mount=type=bind,source=/,target=/host cat /host/etc/shadow"]),
    );
    await expect(checkedBases(DOCKER, engineAnswering(triggers), "FROM base:1\n", "t", 1000)).rejects.toThrow(
      /ONBUILD triggers run in this build/,
    );
  });
});
