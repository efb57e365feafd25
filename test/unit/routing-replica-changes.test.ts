import { describe, expect, it } from "vitest";
import { ReplicaSet, ReplicaSetError } from "../../proxy-worker/routing/replicas.ts";
import type { Upstream } from "../../proxy-worker/upstream.ts";

// The replica set changed at runtime (the control API's /v1/replicas): what registered, removed
// and replaced replicas keep, and what a call waiting for a slot does when its replica leaves.
const noFetch = (() => Promise.reject(new Error("not called"))) as unknown as typeof fetch;
const upstream = (baseUrl: string): Upstream => ({ baseUrl, fetch: noFetch, timeoutMs: 1234 });
const who = (sessionId: string, taskId = "t") => ({ sessionId, taskId, attempt: 0 });

describe("ReplicaSet changes", () => {
  it("adds a replica reached like the others, with a metrics index never reused", () => {
    const set = new ReplicaSet([upstream("http://a")]);
    const { replica, added } = set.add("http://b/");
    expect(added).toBe(true);
    expect(replica).toMatchObject({ id: "http://b", index: 1, origin: "registered" });
    // The same transport and deadline as the configured replica, only the address differs.
    expect(replica.upstream).toMatchObject({ baseUrl: "http://b", fetch: noFetch, timeoutMs: 1234 });
    expect(set.add("http://b").added).toBe(false);
    set.remove("http://b");
    expect(set.add("http://b").replica.index).toBe(2);
  });

  it("keeps a replica's health and in-flight calls across a replace that names it", async () => {
    const set = new ReplicaSet([upstream("http://a"), upstream("http://b")]);
    const held = await set.acquire(who("s1"));
    if (!held.ok) throw new Error("refused");
    const kept = held.lease.replica;
    set.markFailed(set.get(kept.id === "http://a" ? "http://b" : "http://a")!);
    const other = kept.id === "http://a" ? "http://b" : "http://a";
    const { added, removed } = set.replace([kept.id, other, "http://c"]);
    expect(added.map((r) => r.id)).toEqual(["http://c"]);
    expect(removed).toEqual([]);
    expect(set.get(kept.id)).toBe(kept);
    expect(kept.inFlight).toBe(1);
    expect(set.get(other)?.health.healthy(Date.now())).toBe(false);
    held.lease.release("ok");
    expect(kept.inFlight).toBe(0);
  });

  it("refuses to remove the last replica, an unknown one, or an empty or repeated replace", () => {
    const set = new ReplicaSet([upstream("http://a")]);
    expect(() => set.remove("http://a")).toThrow(/only replica/);
    expect(() => set.remove("http://z")).toThrow(ReplicaSetError);
    expect(() => set.replace([])).toThrow(/at least one/);
    expect(() => set.replace(["http://b", "http://b/"])).toThrow(/listed twice/);
    expect(set.replicas.map((r) => r.id)).toEqual(["http://a"]);
  });

  it("moves a call waiting on a removed replica to one still in the set", async () => {
    const set = new ReplicaSet([upstream("http://a"), upstream("http://b")], {
      maxInFlight: 1,
      queueWaitMs: 5_000,
    });
    const first = await set.acquire(who("s1"));
    if (!first.ok) throw new Error("refused");
    const busy = first.lease.replica.id;
    // The same session's next call waits for its replica (affinity) ...
    const waiting = set.acquire(who("s1"));
    await new Promise((r) => setTimeout(r, 20));
    // ... which leaves the set: the call is placed again at once, not after the queue wait.
    set.remove(busy);
    const started = Date.now();
    const got = await waiting;
    if (!got.ok) throw new Error(`refused: ${got.message}`);
    expect(got.lease.replica.id).not.toBe(busy);
    expect(Date.now() - started).toBeLessThan(1_000);
    first.lease.release("ok");
  });
});
