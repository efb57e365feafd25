import type { ObjectStore, PutOptions } from "./object-store.ts";

const encoder = new TextEncoder();

/** An in-process store for tests and single-process runs; same semantics as the other backends. */
export class MemoryStore implements ObjectStore {
  readonly capabilities = { atomicPutIfAbsent: true };
  readonly url = "memory://";
  private readonly objects = new Map<string, Uint8Array>();

  async put(key: string, body: Uint8Array | string, _opts?: PutOptions): Promise<void> {
    this.objects.set(key, typeof body === "string" ? encoder.encode(body) : body.slice());
  }

  async putIfAbsent(key: string, body: Uint8Array | string, opts?: PutOptions): Promise<boolean> {
    if (this.objects.has(key)) return false;
    await this.put(key, body, opts);
    return true;
  }

  async get(key: string): Promise<Uint8Array | null> {
    const value = this.objects.get(key);
    return value ? value.slice() : null;
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort(compareBytes);
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }
}

/** Byte order of UTF-8 keys, as S3 lists them (JS string order differs above U+FFFF). */
export function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
