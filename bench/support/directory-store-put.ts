// CPU of the directory store's put, in-process (all threads, so the thread pool's share counts):
// `node bench/support/directory-store-put.ts [N=3000] [CONC=64]` writes N 32 KB captures into a
// fresh temp root, 64 sessions, CONC puts in flight, and prints CPU ms per put (user, system).
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DirectoryStore } from "../../shared/node/directory-store.ts";

const n = Number(process.argv[2] ?? 3000);
const conc = Number(process.argv[3] ?? 64);
const root = await mkdtemp(join(tmpdir(), "polar-put-"));
const store = new DirectoryStore(root);
const body = randomBytes(32 * 1024);
let next = 0;
let end = n;
// New keys only, as captures are: replacing an existing file costs the kernel more.
const worker = async () => {
  for (let i = next++; i < end; i = next++) {
    await store.put(`tasks/t/sessions/s${i % 64}/captures/${String(i).padStart(8, "0")}.json.gz`, body);
  }
};
await Promise.all(Array.from({ length: conc }, worker)); // warm-up: directories, JIT
end = 2 * n;
const before = process.cpuUsage();
const t0 = performance.now();
await Promise.all(Array.from({ length: conc }, worker));
const cpu = process.cpuUsage(before);
const wall = performance.now() - t0;
console.log(
  `put x${n} c=${conc}: ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} CPU ms/put ` +
    `(user ${(cpu.user / 1000 / n).toFixed(3)}, sys ${(cpu.system / 1000 / n).toFixed(3)}), ` +
    `${(wall / n).toFixed(3)} wall ms/put`,
);
await rm(root, { recursive: true, force: true });
