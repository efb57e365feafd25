import { execFile } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statfsSync } from "node:fs";
import { mkdir, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** mkfs, mount and umount live in sbin, which a runner's PATH may lack. */
function systemBin(name: string): string {
  for (const dir of ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here.
    }
  }
  return name;
}

/** Below this much free space (or with no inode left) the volume counts as full: a write just failed. */
const FULL_BYTES = 1024 * 1024;

/**
 * Why a size-capped session volume cannot be made here, or true: it is an ext4 image on a loop
 * device, which needs root (mount, losetup), `mkfs.ext4` and the loop driver.
 */
export function diskVolumeSupport(): true | string {
  if (process.platform !== "linux")
    return "size-capped work dirs need Linux (an ext4 image on a loop device)";
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    return "size-capped work dirs need a runner started as root (an ext4 image is loop-mounted per session)";
  }
  if (!existsSync("/dev/loop-control")) return "no loop device driver (/dev/loop-control)";
  for (const bin of ["mkfs.ext4", "mount", "umount"]) {
    if (!systemBin(bin).includes("/")) return `${bin} is not installed`;
  }
  return true;
}

/**
 * A session's writable files on their own small filesystem: an ext4 image of `disk_mb` (sparse, so
 * it costs only what is written) loop-mounted at `mountPoint`. The agent fills this, never the
 * host's disk; inodes are capped with it (ext4's default ratio), so does a flood of tiny files.
 * No blocks are reserved for root: the sandbox's uid maps to the runner's, which may be root. No
 * journal: a session's files do not outlive a crash of its runner anyway, and it saves ~1% of the
 * size in writes per session.
 */
export class DiskVolume {
  readonly mountPoint: string;
  private readonly image: string;

  private constructor(mountPoint: string, image: string) {
    this.mountPoint = mountPoint;
    this.image = image;
  }

  static async create(sessionRoot: string, diskMb: number): Promise<DiskVolume> {
    const image = join(sessionRoot, "disk.img");
    const mountPoint = join(sessionRoot, "vol");
    await writeFile(image, "");
    await truncate(image, diskMb * 1024 * 1024);
    await mkdir(mountPoint, { recursive: true });
    await run(systemBin("mkfs.ext4"), [
      "-q",
      "-F",
      "-m",
      "0",
      "-O",
      "^has_journal",
      "-E",
      "nodiscard",
      image,
    ]);
    await run(systemBin("mount"), ["-o", "loop,nosuid,nodev", image, mountPoint]);
    return new DiskVolume(mountPoint, image);
  }

  /** Full: a write or a file creation in it fails now. */
  full(): boolean {
    try {
      const s = statfsSync(this.mountPoint);
      return s.bavail * s.bsize < FULL_BYTES || s.ffree === 0;
    } catch {
      return false;
    }
  }

  /** Unmounts (which frees the loop device: `mount -o loop` sets autoclear) and deletes the image. */
  async remove(): Promise<void> {
    await unmount(this.mountPoint);
    await rm(this.image, { force: true });
  }
}

async function unmount(mountPoint: string): Promise<void> {
  if (!isMountPoint(mountPoint)) return;
  const umount = systemBin("umount");
  try {
    await run(umount, [mountPoint]);
  } catch {
    // Busy (a process still dying): detach it now, the kernel frees it when the last user goes.
    await run(umount, ["-l", mountPoint]).catch(() => {});
  }
}

function isMountPoint(path: string): boolean {
  try {
    return readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .some((l) => l.split(" ")[4] === path);
  } catch {
    return false;
  }
}

/** Unmounts every volume under a dead runner's session root before its files are removed. */
export async function unmountUnder(root: string): Promise<void> {
  let lines: string[];
  try {
    lines = readFileSync("/proc/self/mountinfo", "utf8").split("\n");
  } catch {
    return;
  }
  const points = lines
    .map((l) => l.split(" ")[4])
    .filter((p): p is string => p?.startsWith(`${root}/`) === true)
    // Deepest first.
    .sort((a, b) => b.length - a.length);
  for (const p of points) await unmount(p);
}
