// Shared by the fake-docker and fake-apptainer stand-ins: they map a container engine's command
// line onto bubblewrap so the docker/apptainer runtimes' lifecycle runs end to end on a machine
// without those engines. Only the flags the runtimes use are understood; anything else fails loudly.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function stateDir(name) {
  const dir = process.env.FAKE_CONTAINER_STATE ?? join("/tmp", `fake-${name}-state`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function logCall(dir, argv) {
  appendFileSync(join(dir, "calls.log"), `${JSON.stringify(argv)}\n`);
}

export function saveState(dir, name, state) {
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(state));
}

export function loadState(dir, name) {
  const file = join(dir, `${name}.json`);
  if (!existsSync(file)) fail(`no such container: ${name}`);
  return JSON.parse(readFileSync(file, "utf8"));
}

export function removeState(dir, name) {
  const file = join(dir, `${name}.json`);
  if (existsSync(file)) {
    const state = JSON.parse(readFileSync(file, "utf8"));
    for (const pid of state.pids ?? []) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {}
    }
  }
  rmSync(file, { force: true });
}

export function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(125);
}

/** Runs argv in bwrap with the given mounts; records the pid in the container's state for kill/rm. */
export function runInBwrap({ dir, name, binds, network, cwd, env, argv }) {
  const args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"];
  if (network === "none") args.push("--unshare-net");
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  for (const b of binds) args.push(b.ro ? "--ro-bind" : "--bind", b.host, b.inside);
  if (cwd) args.push("--chdir", cwd);
  const child = spawn("bwrap", [...args, "--", ...argv], { stdio: "inherit", env });
  if (name) {
    const state = loadState(dir, name);
    state.pids = [...(state.pids ?? []), child.pid];
    saveState(dir, name, state);
  }
  child.on("error", (err) => fail(`bwrap: ${err.message}`));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 137 : 1)));
}

export function parseBind(spec, sep = ":") {
  const [host, inside = host, mode] = spec.split(sep);
  return { host, inside, ro: mode === "ro" };
}
