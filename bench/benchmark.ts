/** A benchmark module: `bench/<name>.ts` default-exports one of these; `npm run bench` runs them all. */
export interface Benchmark {
  name: string;
  /** One-line description for the index of BENCHMARKS.md. */
  title?: string;
  run(): Promise<{ markdown: string }>;
}
