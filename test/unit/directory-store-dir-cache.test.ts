import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DirectoryStore } from "../../shared/node/directory-store.ts";

// The store remembers which directories it made (one mkdir per session, not per put); these
// check that what it remembers never makes a put fail or leave debris.
let root = "";
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "polar-dircache-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("DirectoryStore remembered directories", () => {
  it("makes a directory again when it was removed after the store made it", async () => {
    const store = new DirectoryStore(join(root, "removed"));
    await store.put("tasks/t/sessions/s/captures/a.json.gz", "first");
    await rm(join(root, "removed", "tasks"), { recursive: true });
    await store.put("tasks/t/sessions/s/captures/b.json.gz", "second");
    expect(
      new TextDecoder().decode((await store.get("tasks/t/sessions/s/captures/b.json.gz")) ?? undefined),
    ).toBe("second");
    expect(await store.get("tasks/t/sessions/s/captures/a.json.gz")).toBeNull();
  });

  it("puts many objects into one directory with only the objects left behind", async () => {
    const store = new DirectoryStore(join(root, "many"));
    const keys = Array.from(
      { length: 20 },
      (_, i) => `tasks/t/sessions/s/captures/${String(i).padStart(2, "0")}`,
    );
    await Promise.all(keys.map((k) => store.put(k, k)));
    expect(await store.list("tasks/t/sessions/s/")).toEqual(keys);
    expect((await readdir(join(root, "many/tasks/t/sessions/s/captures"))).sort()).toEqual(
      keys.map((k) => k.slice(k.lastIndexOf("/") + 1)),
    );
  });

  it("putIfAbsent after the directory was removed still writes once, then refuses", async () => {
    const store = new DirectoryStore(join(root, "absent"));
    expect(await store.putIfAbsent("tasks/t/x", "1")).toBe(true);
    await rm(join(root, "absent", "tasks"), { recursive: true });
    expect(await store.putIfAbsent("tasks/t/x", "2")).toBe(true);
    expect(await store.putIfAbsent("tasks/t/x", "3")).toBe(false);
    expect(new TextDecoder().decode((await store.get("tasks/t/x")) ?? undefined)).toBe("2");
  });
});
