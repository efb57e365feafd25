import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readDockerfile } from "../../batch-runner/harbor/dockerfile.ts";
import { importHarborTask } from "../../batch-runner/harbor/import-task.ts";
import {
  baseImagesOf,
  dockerfileBytesRefusals,
  dockerfileInstructions,
  dockerfileRefusals,
  onbuildRefusals,
} from "../../batch-runner/runtime/dockerfile-policy.ts";

/*
 * What the runner lets a task's Dockerfile hold before it builds it (issue 49 item 1): every form
 * that reaches a host path, network or privilege through the builder is refused by line, and the
 * lines are split as the builder splits them, so no line hides from the check.
 */
const refusals = (body: string) => dockerfileRefusals(`FROM debian:bookworm-slim AS link\n${body}`);
const ok = (body: string) => expect(refusals(body)).toEqual([]);
const refused = (body: string, why: RegExp) => {
  const out = refusals(body);
  expect(out.length, `${JSON.stringify(body)} was accepted`).toBeGreaterThan(0);
  expect(out.join("\n")).toMatch(why);
};

describe("the Dockerfile a runner builds", () => {
  it("refuses the issue's attack: a bind mount from a stage holding a link to /", () => {
    const attack =
      "FROM debian:bookworm-slim AS link\nRUN ln -s / /hostroot\nFROM debian:bookworm-slim\n" +
      "RUN --mount=type=bind,from=link,source=/hostroot,target=/h,rw cat /h/etc/shadow > /x\n";
    expect(dockerfileRefusals(attack)).toEqual([
      expect.stringMatching(
        /^line 4: RUN --mount: refused: a build mount can reach host paths .*CVE-2024-1753.*; drop the mount: COPY what the step reads/,
      ),
    ]);
  });

  it("refuses every RUN mount type and flag form, and flags RUN does not allow", () => {
    for (const flag of [
      "--mount=type=bind,source=/,target=/h",
      "--mount=type=cache,id=../../../../,target=/c",
      "--mount=type=cache,target=/root/.cache",
      "--mount=type=secret,id=x",
      "--mount=type=ssh",
      "--mount=type=tmpfs,target=/t",
      "--mount type=bind,source=/,target=/h",
      '--mount="type=bind,source=/,target=/h"',
      "--MOUNT=type=bind,source=/,target=/h",
      "--network=none --mount=type=bind,source=/,target=/h",
      "--network=host",
      "--network=none\u00a0--mount=type=bind,source=/,target=/h",
      "--security=insecure",
      "--device=/dev/sda",
    ])
      refused(`RUN ${flag} true\n`, /line 2: RUN --/);
    ok("RUN --network=none true\nRUN --network=default true\nRUN echo --mount=type=bind is text here\n");
  });

  it("reads flags and continuations exactly as the builder does: no split or joined line hides a flag", () => {
    for (const body of [
      "RUN \\\n  --mount=type=bind,source=/,target=/h true\n",
      "RUN --mount=type=bind,\\\n# a comment inside the continuation\n\n  source=/,target=/h true\n",
      "RUN true \\ \t\nrun --mount=type=bind,source=/,target=/h true\n".replace("run --", "RUN --"),
      "run --mount=type=bind,source=/,target=/h true\n",
      "  \tRuN   --mount=type=bind,source=/,target=/h true\n",
      "RUN true \\\n\nRUN --mount=type=bind,source=/,target=/h true\n",
      "RUN true \\\u00a0\nRUN --mount=type=bind,source=/,target=/h true\n",
      "RUN true \\\r\nRUN --mount=type=bind,source=/,target=/h true\r\n",
      "ONBUILD RUN --mount=type=bind,source=/,target=/h true\n",
    ])
      refused(body, /RUN --mount: refused/);
    // A comment line ending in a backslash continues nothing (BuildKit drops comments first).
    expect(dockerfileInstructions("# x \\\nRUN a \\\n  b\\\n# c\n\n  d\nENV A=1").map((i) => i.args)).toEqual(
      ["a   b  d", "A=1"],
    );
  });

  it("refuses other escape characters and frontends other than docker/dockerfile:1, anywhere", () => {
    expect(
      dockerfileRefusals("# escape=`\nFROM x\nRUN a `\n  --mount=type=bind,source=/,target=/h\n"),
    ).toEqual(
      expect.arrayContaining([expect.stringMatching(/^line 1: the escape=` parser directive is refused/)]),
    );
    for (const d of ["#syntax=evil/frontend", "# SYNTAX = docker/dockerfile:1-labs", "  #  syntax=x:1"])
      expect(dockerfileRefusals(`${d}\nFROM x\n`).join()).toMatch(/syntax=.* parser directive is refused/);
    expect(dockerfileRefusals("# syntax=docker/dockerfile:1.7\n# escape=\\\nFROM x\n")).toEqual([]);
    expect(dockerfileRefusals("\uFEFF# escape=`\nFROM x\n").join()).toMatch(/escape/);
  });

  it("refuses heredocs, remote ADD, host transports and unknown or odd keywords", () => {
    refused("RUN <<EOF\nRUN --mount=type=bind,source=/,target=/h true\nEOF\n", /heredoc/);
    refused("COPY <<-'X' /a\nhi\nX\n", /heredoc/);
    for (const src of ["http://169.254.169.254/latest/meta-data", "https://h/x.tgz", "git@h:r.git"])
      refused(`ADD ${src} /x\n`, /fetched by the engine on the host/);
    refused('ADD ["http://127.0.0.1:8787/x", "/x"]\n', /fetched by the engine/);
    for (const image of ["dir:etc", "oci-archive:/root/img.tar", "containers-storage:[overlay@/x]y", "$BASE"])
      refused(`FROM ${image}\n`, /line 2: FROM/);
    refused("COPY --from=oci:/var/lib/x /a /b\n", /transport/);
    refused("COPY --from=$STAGE /a /b\n", /variable/);
    refused("COPY --from=a/../b /a /b\n", /not an image reference or an earlier stage/);
    refused('COPY --chown="root" a b\n', /a flag may hold only/);
    refused("COPY --parents a b\n", /not a flag the runner lets a build use/);
    refused("WOR\u212aDIR /x\n", /is not an instruction the runner builds/);
    refused("WORKD\u0131R /x\n", /is not an instruction the runner builds/);
    refused("FROB x\n", /"FROB" is not an instruction/);
    refused("RUN\u00a0--mount=type=bind,source=/,target=/h true\n", /not an instruction/);
    refused("ONBUILD ONBUILD RUN x\n", /ONBUILD ONBUILD/);
  });

  it("builds what Harbor tasks write: stages, images, COPY and ADD flags, HEALTHCHECK", () => {
    ok(
      [
        "ARG MARK=built",
        "RUN apt-get update && \\",
        "    apt-get install -y curl # trailing words",
        "COPY --from=ghcr.io/astral-sh/uv:0.5.4 /uv /bin/uv",
        "COPY --from=link --chown=root:root --chmod=755 /a /b",
        "COPY --from=0 /a /b",
        "ADD --chown=1000:1000 entrypoint.sh /usr/local/bin/",
        'ADD ["a b.tar.gz", "/opt/"]',
        "FROM --platform=$BUILDPLATFORM localhost:5000/tools/img:1.2@sha256:" + "a".repeat(64),
        "HEALTHCHECK --interval=5s --retries=3 CMD true",
        'ENTRYPOINT ["/bin/sh", "-c"]',
        "RUN echo $((1 << 2))",
        "ONBUILD COPY . /app",
        "FROM scratch",
        "COPY --from=LINK /x /y",
        "",
      ].join("\n"),
    );
  });

  it("refuses a Dockerfile that is not UTF-8 (a lone byte 0xA0 is a space to the builder's flag reader)", () => {
    const bytes = new Uint8Array([
      ...Buffer.from("FROM x\nRUN "),
      0xa0,
      ...Buffer.from("--mount=type=bind,source=/,target=/h true\n"),
    ]);
    expect(dockerfileBytesRefusals(bytes)).toEqual([expect.stringMatching(/not UTF-8/)]);
  });

  it("refuses at import what the runner would not build, naming the file and line", () => {
    const text =
      "FROM x AS a\nRUN ln -s / /r\nFROM x\nRUN --mount=type=bind,from=a,source=/r,target=/h,rw true\n";
    expect(() =>
      readDockerfile(text, "environment/Dockerfile", { build: true, builtByRunner: true }),
    ).toThrow(/environment\/Dockerfile line 4: RUN --mount: refused/);
    // A prebuilt task's Dockerfile is its recipe, never built here: read for its WORKDIR only.
    expect(readDockerfile(`${text}WORKDIR /app\n`, "environment/Dockerfile", { build: true }).workdir).toBe(
      "/app",
    );
  });
  it("names the base images whose ONBUILD triggers a build runs, and holds those triggers to the same rules", () => {
    expect(baseImagesOf("FROM a:1 AS s\nFROM s\nFROM --platform=x b AS t\nFROM scratch\nFROM a:1\n")).toEqual(
      [
        { line: 1, image: "a:1" },
        { line: 3, image: "b" },
        { line: 5, image: "a:1" },
      ],
    );
    expect(onbuildRefusals(["COPY . /app", "RUN make"])).toEqual([]);
    expect(
      onbuildRefusals(["RUN --mount=type=bind,from=evil/link,source=/hostroot,target=/h true", "FROM x"]),
    ).toEqual([
      expect.stringMatching(/^ONBUILD RUN --mount=.*: RUN --mount: refused/),
      expect.stringMatching(/^ONBUILD FROM x: FROM: not allowed in ONBUILD/),
    ]);
  });
  it("import-harbor refuses such a task, and takes it with docker_image (the Dockerfile then is never built here)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "polar-dockerfile-policy-"));
    try {
      await mkdir(join(dir, "environment"), { recursive: true });
      await mkdir(join(dir, "tests"), { recursive: true });
      await writeFile(join(dir, "instruction.md"), "Do it.\n");
      await writeFile(join(dir, "tests", "test.sh"), "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n");
      await writeFile(
        join(dir, "environment", "Dockerfile"),
        "FROM debian:bookworm-slim AS link\nRUN ln -s / /hostroot\nFROM debian:bookworm-slim\nRUN --mount=type=bind,from=link,source=/hostroot,target=/h,rw true\nWORKDIR /app\n",
      );
      await writeFile(join(dir, "task.toml"), 'version = "1.0"\n');
      const err = await importHarborTask(dir, { agent: { harness: "pi" } }).catch((e: Error) => e);
      expect(String(err)).toMatch(/environment\/Dockerfile line 4: RUN --mount: refused/);
      await writeFile(join(dir, "task.toml"), 'version = "1.0"\n[environment]\ndocker_image = "x/y:1"\n');
      expect((await importHarborTask(dir, { agent: { harness: "pi" } })).task.runtime).toMatchObject({
        image: "prebuilt:x/y:1",
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
