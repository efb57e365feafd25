import { spawnSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/*
 * Issue 41, items 9 and 10: a downloaded Harbor collection is hostile input to `polar import-harbor`.
 * 9: a symlink anywhere in a task (instruction.md -> a host file, task.toml, tests/, environment/)
 *    made a host file part of the task; each is refused now, naming the path.
 * 10: the TOML reader ran `python3 -c` from the caller's cwd, so a collection's own `json.py` was
 *    imported (and a `python3` in a `.` PATH entry run) on the host. Every case drives the real CLI.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const TASK: Record<string, string> = {
  "task.toml": 'schema_version = "1.4"\n[verifier]\ntimeout_sec = 60.0\n',
  "instruction.md": "Create /app/hello.txt containing hi.\n",
  "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
  "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
};

let root: string;
let secret: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-harbor-attack-"));
  secret = join(root, "host-secret.txt");
  await writeFile(secret, "HOST-SECRET-4242\n");
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let n = 0;
async function task(change: Record<string, string | null> = {}): Promise<string> {
  const dir = join(root, "collection", `task-${++n}`);
  for (const [path, text] of Object.entries({ ...TASK, ...change })) {
    if (text === null) continue;
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

function importHarbor(dirs: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const res = spawnSync(
    process.execPath,
    [
      join(ROOT, "bin/polar.js"),
      "import-harbor",
      ...dirs,
      "--harness",
      "shell",
      "--settings",
      '{"command":"true"}',
    ],
    { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, encoding: "utf8", timeout: 60_000 },
  );
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe("polar import-harbor reads no symlink (issue 41, item 9)", () => {
  const cases: [string, (dir: string) => Promise<void>, string][] = [
    [
      "instruction.md linked to a host file",
      async (dir) => symlink(secret, join(dir, "instruction.md")),
      "instruction.md: a symlink",
    ],
    [
      "instruction.md linked to /etc/hostname",
      async (dir) => symlink("/etc/hostname", join(dir, "instruction.md")),
      "instruction.md: a symlink",
    ],
    [
      "task.toml linked elsewhere",
      async (dir) => {
        const other = join(root, `other-${n}.toml`);
        await writeFile(other, TASK["task.toml"]);
        await symlink(other, join(dir, "task.toml"));
      },
      "task.toml: a symlink",
    ],
    [
      "tests/ linked to a directory outside the task",
      async (dir) => {
        const other = join(root, `tests-${n}`);
        await mkdir(other, { recursive: true });
        await writeFile(join(other, "test.sh"), `cat ${secret}\n`);
        await symlink(other, join(dir, "tests"));
      },
      "tests: a symlink",
    ],
    [
      "environment/ linked elsewhere",
      async (dir) => {
        const other = join(root, `env-${n}`);
        await mkdir(other, { recursive: true });
        await writeFile(join(other, "Dockerfile"), TASK["environment/Dockerfile"]);
        await symlink(other, join(dir, "environment"));
      },
      "environment: a symlink",
    ],
    [
      "environment/Dockerfile linked elsewhere",
      async (dir) => symlink(secret, join(dir, "environment", "Dockerfile")),
      "environment/Dockerfile: a symlink",
    ],
    [
      "a README.md linked to a host file",
      async (dir) => symlink(secret, join(dir, "README.md")),
      "README.md: a symlink",
    ],
  ];

  it.each(cases)(
    "%s: refused with the path, nothing of the target written",
    async (_name, plant, message) => {
      const base: Record<string, string | null> = {};
      if (message.startsWith("instruction.md")) base["instruction.md"] = null;
      if (message.startsWith("task.toml")) base["task.toml"] = null;
      if (message.startsWith("tests")) base["tests/test.sh"] = null;
      if (message.startsWith("environment: ")) base["environment/Dockerfile"] = null;
      if (message.startsWith("environment/Dockerfile")) base["environment/Dockerfile"] = null;
      const dir = await task(base);
      if (message.startsWith("environment/Dockerfile"))
        await mkdir(join(dir, "environment"), { recursive: true });
      await plant(dir);
      const res = importHarbor([dir]);
      expect(res.stderr).toContain(`${dir}: refused: ${message}`);
      expect(res.status).toBe(1);
      expect(res.stdout).toBe("");
      expect(res.stdout + res.stderr).not.toContain("HOST-SECRET-4242");
    },
  );

  it("refuses a task dir that is itself a link", async () => {
    const real = await task();
    const link = join(root, "collection", "linked-task");
    await symlink(real, link);
    const res = importHarbor([link]);
    expect(res.stderr).toContain(`${link}: refused: ${link}: a symlink`);
    expect(res.status).toBe(1);
  });

  it("still converts the same task without links", async () => {
    const res = importHarbor([await task()]);
    expect(res.stderr).toContain("1 of 1 tasks converted");
    expect(res.status).toBe(0);
  });
});

describe("polar import-harbor runs nothing of the collection or the cwd (issue 41, item 10)", () => {
  it("never imports a json.py or tomllib.py lying in the cwd (the collection's root)", async () => {
    const dir = await task();
    const collection = dirname(dir);
    const marker = join(root, "json-py-ran");
    for (const mod of ["json", "tomllib"]) {
      await writeFile(
        join(collection, `${mod}.py`),
        `open(${JSON.stringify(marker)}, "a").write(${JSON.stringify(`${mod}\n`)})\nraise SystemExit(0)\n`,
      );
    }
    const res = importHarbor([dir], { cwd: collection });
    expect(await readFile(marker, "utf8").catch(() => "not run")).toBe("not run");
    expect(res.stderr).toContain("1 of 1 tasks converted");
    expect(res.status).toBe(0);
  });

  it("never runs a python3 that a relative PATH entry finds in the cwd", async () => {
    const dir = await task();
    const collection = dirname(dir);
    const marker = join(root, "python3-ran");
    await writeFile(join(collection, "python3"), `#!/bin/sh\necho ran > ${marker}\nexit 1\n`);
    await chmod(join(collection, "python3"), 0o755);
    const res = importHarbor([dir], {
      cwd: collection,
      env: { ...process.env, PATH: `.:${process.env.PATH}` },
    });
    expect(await readFile(marker, "utf8").catch(() => "not run")).toBe("not run");
    expect(res.status).toBe(0);
  });

  it("never runs a python3 from a PATH entry inside the task", async () => {
    const dir = await task();
    const marker = join(root, "python3-in-task-ran");
    const bin = join(dir, "tests", "bin");
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, "python3"), `#!/bin/sh\necho ran > ${marker}\nexit 1\n`);
    await chmod(join(bin, "python3"), 0o755);
    importHarbor([dir], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    expect(await readFile(marker, "utf8").catch(() => "not run")).toBe("not run");
  });
});
