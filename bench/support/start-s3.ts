// s3rver in a child process of its own (bench/support/s3rver-process.ts), so its work is not
// counted in the benchmark process; resolves with its endpoint once it listens.
import { type Child, startChild } from "./children.ts";

const processFile = new URL("./s3rver-process.ts", import.meta.url).pathname;

export async function startS3(): Promise<{ child: Child; endpoint: string }> {
  let endpoint = "";
  const child = await startChild(process.execPath, [processFile], {
    ready: (line) => {
      const m = /^listening (http\S+)/.exec(line);
      if (m) endpoint = m[1];
      return m !== null;
    },
  });
  return { child, endpoint };
}
