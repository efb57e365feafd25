import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "../../batch-runner/queue/memory-queue.ts";
import { startRunner } from "../../batch-runner/runner.ts";
import { submitTasks } from "../../batch-runner/submit.ts";
import { TaskRequest } from "../../shared/schemas/task.ts";
import {
  capturesOf,
  type RunnerStack,
  readResult,
  scriptedTask,
  startRunnerStack,
  waitFor,
} from "../support/runner-stack.ts";
import { bwrapMissing } from "../support/sandbox-lanes.ts";

const bwrapProblem = bwrapMissing();
const bwrapWorks = bwrapProblem === null;
if (bwrapProblem) console.warn(`skipping: ${bwrapProblem}`);

describe.skipIf(!bwrapWorks)("a session in the bwrap runtime", () => {
  let stack: RunnerStack;
  let other: Server;
  let otherUrl: string;
  beforeAll(async () => {
    stack = await startRunnerStack();
    other = createServer((_req, res) => res.end("reached"));
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", () => r()));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    other?.closeAllConnections();
    await new Promise((r) => other?.close(r));
    await stack?.close();
  });

  it("reaches the proxy (every turn captured) but no other server, and cannot write outside its work dir", async () => {
    const escapePath = join(process.cwd(), `.bwrap-session-escape-${process.pid}`);
    const fetchOther = `node -e 'fetch(process.argv[1]).then(()=>console.log("NET-OPEN"),()=>console.log("NET-BLOCKED"))' ${otherUrl}`;
    const task = TaskRequest.parse(
      scriptedTask(
        "bwrap-session",
        [
          "shell: echo hi > hello.txt && cat hello.txt",
          `shell: ${fetchOther}`,
          `shell: (echo x > ${escapePath} && echo WRITE-OPEN) || echo WRITE-BLOCKED`,
          "say: done",
        ],
        { runtime: { backend: "bwrap" } },
      ),
    );
    const queue = new MemoryQueue();
    const runner = await startRunner({
      queue,
      store: stack.store,
      proxyUrl: stack.proxy.url,
      signingKey: stack.signingKey,
      run: 1,
      waitSeconds: 1,
      sessionsRoot: join(stack.root, "sessions"),
      log: () => {},
    });
    try {
      await submitTasks(stack.store, queue, [task]);
      const result = await waitFor(
        () => readResult(stack.store, task.task_id, `${task.task_id}-0`),
        "the result",
      );
      expect(result.status).toBe("COMPLETED");
      const captures = await capturesOf(stack.store, task.task_id, `${task.task_id}-0`);
      expect(captures).toHaveLength(4);
      // The last request carries every tool result the agent saw inside the sandbox.
      const messages = (
        captures[captures.length - 1].request as { messages: { role: string; content: string }[] }
      ).messages;
      const seen = messages
        .filter((m) => m.role === "tool")
        .map((m) => m.content)
        .join("\n");
      expect(seen).toContain("hi");
      expect(seen).toContain("NET-BLOCKED");
      expect(seen).toContain("WRITE-BLOCKED");
      expect(seen).not.toContain("NET-OPEN");
      expect(existsSync(escapePath)).toBe(false);
    } finally {
      await runner.stop(0);
    }
  });
});
