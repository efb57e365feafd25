/*
 * Reads `strace -f -e trace=connect,execve,clone,clone3,fork,vfork[,bind]` output of a whole
 * `polar run`. Every connect() a process makes is one line (DNS lookups included: they connect
 * to the resolver), so "the harness talked only to the proxy" is checkable even when an
 * attempt fails for want of a route out. clone/execve lines give the process tree, so the
 * harness's own connects are told apart from polar's (the proxy connects to the policy).
 */

export interface ConnectCall {
  pid: number;
  family: string;
  /** IP address, or the socket path for AF_UNIX. */
  address: string;
  port: number | null;
  line: string;
}

/** A bind() that succeeded: a port the process listens on (or connects from). */
export interface BindCall {
  pid: number;
  port: number;
}

export interface StraceAudit {
  connects: ConnectCall[];
  binds: BindCall[];
  /** pids (and thread ids) of every process started from an executable under `harnessRoot`. */
  harnessPids: Set<number>;
}

const PID = /^(\d+) /;
const FAMILY = /sa_family=(AF_[A-Z0-9]+)/;
const PORT = /sin6?_port=htons\((\d+)\)/;
const V4 = /inet_addr\("([^"]+)"\)/;
const V6 = /inet_pton\(AF_INET6, "([^"]+)"/;
const UNIX = /sun_path=(@?"[^"]*"|@[^,}]*)/;
/**
 * `clone(...) = 123` (a split call joined again by straceLines); inside a pid namespace (with
 * `--decode-pids=pidns`) `= 3 /* 123 in strace's PID NS *\/`, and 123 is the one.
 */
const SPAWN = /\b(?:clone3?|v?fork)\(.*= (\d+)(?: \/\* (\d+) in strace's PID NS \*\/)?$/;
const EXECVE = /\bexecve\("([^"]+)"/;
const BIND = /\bbind\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\)/;
const UNFINISHED = " <unfinished ...>";
const RESUMED = /^(\d+) +<\.\.\. [a-z0-9_]+ resumed>(.*)$/;

/**
 * strace -f splits a call another thread interrupts into `PID call(args <unfinished ...>` and,
 * later, `PID <... call resumed>rest = result`. Each is joined back into one line, so the
 * arguments (an execve's path, a bind's port) and the result are read together; busy processes
 * (Chromium, node) split many calls, and more of them on a loaded machine.
 */
export function straceLines(text: string): string[] {
  const lines: string[] = [];
  const pending = new Map<string, number>(); // pid -> index of its unfinished call in `lines`
  for (const line of text.split("\n")) {
    const resumed = RESUMED.exec(line);
    const at = resumed ? pending.get(resumed[1] as string) : undefined;
    if (resumed && at !== undefined) {
      lines[at] = (lines[at] as string).slice(0, -UNFINISHED.length) + resumed[2];
      pending.delete(resumed[1] as string);
      continue;
    }
    const pid = PID.exec(line)?.[1];
    if (pid !== undefined && line.endsWith(UNFINISHED)) pending.set(pid, lines.length);
    lines.push(line);
  }
  return lines;
}

export function auditStrace(text: string, harnessRoot: string): StraceAudit {
  const connects: ConnectCall[] = [];
  const binds: BindCall[] = [];
  const children = new Map<number, number[]>();
  const roots: number[] = [];
  for (const line of straceLines(text)) {
    const pid = Number(PID.exec(line)?.[1] ?? Number.NaN);
    if (!Number.isInteger(pid)) continue;
    const spawned = SPAWN.exec(line);
    if (spawned) {
      const list = children.get(pid) ?? [];
      list.push(Number(spawned[2] ?? spawned[1]));
      children.set(pid, list);
      continue;
    }
    const exec = EXECVE.exec(line);
    if (exec) {
      // Only a successful exec turns the process into the harness.
      if (exec[1]?.startsWith(harnessRoot) && / = 0$/.test(line)) roots.push(pid);
      continue;
    }
    const bound = BIND.exec(line);
    if (bound) {
      if (/ = 0$/.test(line)) binds.push({ pid, port: Number(bound[1]) });
      continue;
    }
    if (!line.includes("connect(")) continue;
    const family = FAMILY.exec(line)?.[1];
    if (!family) continue;
    const port = PORT.exec(line)?.[1];
    const address = V4.exec(line)?.[1] ?? V6.exec(line)?.[1] ?? UNIX.exec(line)?.[1] ?? "";
    connects.push({ pid, family, address, port: port ? Number(port) : null, line });
  }
  const harnessPids = new Set<number>();
  const stack = [...roots];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (harnessPids.has(pid)) continue;
    harnessPids.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return { connects, binds, harnessPids };
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

function isIp(call: ConnectCall): boolean {
  return call.family === "AF_INET" || call.family === "AF_INET6";
}

/** IP connects that leave the machine (anything not loopback); Unix sockets stay local. */
export function externalConnects(calls: readonly ConnectCall[]): ConnectCall[] {
  return calls.filter((c) => isIp(c) && !LOOPBACK.test(c.address));
}

/** IP connects from `pids` to anything but loopback `allowedPort` (the proxy). */
export function connectsOtherThan(
  calls: readonly ConnectCall[],
  pids: ReadonlySet<number>,
  allowedPort: number,
): ConnectCall[] {
  return calls.filter(
    (c) => pids.has(c.pid) && isIp(c) && !(LOOPBACK.test(c.address) && c.port === allowedPort),
  );
}
