/**
 * A minimal image for the docker runtime on podman, built from this host's own files with no
 * registry: a shell, coreutils and the few tools agents and the sandbox audit use, the shared
 * libraries they and the runner's node need (the runtime binds that node in), `/etc/passwd`,
 * `/etc/group`, `/etc/hosts`. Imported with `podman import`; tagged by a hash of its inputs, so a
 * second run finds it and returns at once.
 *
 *   node scripts/podman-image.ts [--bin podman]   # prints the image reference
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { resolveContainerEngine } from "../batch-runner/runtime/container-engine.ts";

export const IMAGE_REPOSITORY = "localhost/polar-sandbox";

/** What a preset's shell tool and the audit scripts call; each copied from the host's PATH. */
// biome-ignore format: one list, read as a set of words
const COMMANDS = [
  "sh", "bash", "env", "cat", "echo", "ls", "sleep", "mkdir", "rm", "cp", "mv", "head", "tail", "wc", "sort", "uniq", "tr", "printf", "test", "true", "false", "id", "pwd", "touch", "chmod", "ln", "dirname", "basename", "grep", "sed", "kill", "setsid", "which", "find", "xargs", "cut", "tee", "stat", "readlink", "realpath", "date", "uname", "seq", "mktemp", "du", "expr", "timeout", "sha256sum",
];

/**
 * Libraries a harness CLI's own native binary links that no command above or node loads (Claude
 * Code's binary needs librt: "error while loading shared libraries: librt.so.1" without it).
 */
const HARNESS_LIBRARIES = ["librt.so.1", "libdl.so.2", "libpthread.so.0"];

/** Where the host's dynamic linker finds a library by its soname. */
function libraryPath(soname: string): string {
  const out = spawnSync("ldconfig", ["-p"], { encoding: "utf8" });
  const line = out.stdout
    .split("\n")
    .find((l) => l.trim().startsWith(`${soname} `) && /x86-64|AArch64/.test(l));
  const path = line?.split("=> ")[1]?.trim();
  if (!path) throw new Error(`podman-image: ${soname} is not installed on this host`);
  return path;
}

const ETC: Record<string, string> = {
  "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
  "etc/group": "root:x:0:\nnogroup:x:65534:\n",
  "etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
};

/** Debian merges /bin, /lib and /lib64 into /usr; the image does the same with links. */
const MERGED = ["bin", "lib", "lib64", "sbin"];

function which(command: string): string {
  for (const dir of ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]) {
    const path = `${dir}/${command}`;
    if (spawnSync("test", ["-x", path]).status === 0) return path;
  }
  throw new Error(`podman-image: ${command} is not installed on this host`);
}

/** Shared objects an ELF file loads (none for a script). */
function librariesOf(path: string): string[] {
  const out = spawnSync("ldd", [path], { encoding: "utf8" });
  if (out.status !== 0) return [];
  return [...out.stdout.matchAll(/(\/\S+\.so[^\s]*)/g)].map((m) => m[1] as string);
}

/** Where a host path goes in the image: under /usr as the merged layout has it. */
function imagePath(hostPath: string): string {
  const top = hostPath.split("/")[1] ?? "";
  return MERGED.includes(top) ? `usr${hostPath}` : hostPath.slice(1);
}

/** Every host file the image holds, sorted: the commands and the libraries they and node load. */
export function imageInputs(): string[] {
  const files = new Set<string>();
  for (const command of COMMANDS) files.add(which(command));
  for (const file of [...files, process.execPath]) for (const lib of librariesOf(file)) files.add(lib);
  for (const soname of HARNESS_LIBRARIES) files.add(libraryPath(soname));
  return [...files].sort();
}

/** The image's tag: this script, the `/etc` files and every input's bytes. */
export function imageTag(inputs: string[]): string {
  const hash = createHash("sha256");
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  hash.update(JSON.stringify(ETC));
  for (const file of inputs) hash.update(`${file}\0`).update(readFileSync(file));
  return hash.digest("hex").slice(0, 16);
}

function stage(inputs: string[], root: string): void {
  mkdirSync(join(root, "usr"), { recursive: true });
  for (const top of MERGED) {
    mkdirSync(join(root, "usr", top), { recursive: true });
    symlinkSync(`usr/${top}`, join(root, top));
  }
  for (const dir of ["tmp", "root", "proc", "sys", "dev", "etc"])
    mkdirSync(join(root, dir), { recursive: true });
  chmodSync(join(root, "tmp"), 0o1777);
  for (const file of inputs) {
    const dest = join(root, imagePath(file));
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(file, dest);
    chmodSync(dest, 0o755);
  }
  for (const [path, text] of Object.entries(ETC)) writeFileSync(join(root, path), text);
}

/** Builds the image unless it exists; returns its reference. */
export async function ensurePodmanImage(
  bin = "podman",
  log: (line: string) => void = () => {},
): Promise<string> {
  const engine = await resolveContainerEngine(bin);
  const cli = [engine.bin, ...engine.globalFlags];
  const inputs = imageInputs();
  const ref = `${IMAGE_REPOSITORY}:${imageTag(inputs)}`;
  const exists = spawnSync(cli[0] as string, [...cli.slice(1), "image", "exists", ref]);
  if (exists.status === 0) return ref;
  const started = Date.now();
  const root = mkdtempSync(join(tmpdir(), "polar-image-"));
  try {
    stage(inputs, join(root, "rootfs"));
    const tarball = join(root, "rootfs.tar");
    const tar = spawnSync(
      "tar",
      [
        "--sort=name",
        "--mtime=@0",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "-C",
        join(root, "rootfs"),
        "-cf",
        tarball,
        ".",
      ],
      { encoding: "utf8" },
    );
    if (tar.status !== 0) throw new Error(`podman-image: tar failed: ${tar.stderr}`);
    const imported = spawnSync(cli[0] as string, [...cli.slice(1), "import", "--quiet", tarball, ref], {
      encoding: "utf8",
    });
    if (imported.status !== 0) throw new Error(`podman-image: podman import failed: ${imported.stderr}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  log(`podman-image: built ${ref} from ${inputs.length} host files in ${Date.now() - started} ms`);
  return ref;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf("--bin");
  const bin = i > 0 ? process.argv[i + 1] : "podman";
  ensurePodmanImage(bin, (line) => console.error(line)).then(
    (ref) => console.log(ref),
    (err: Error) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
