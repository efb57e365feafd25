import { describe, expect, it } from "vitest";
import { planTurn } from "../../dry-run-policy/plan-turn.ts";
import { chooseAlternative, scriptAlternatives } from "../../dry-run-policy/script.ts";
import { sessionIdsFor } from "../../shared/tasks/submit-task.ts";
import { sampleIndexOf } from "../../shared/upstream-session.ts";
import { scriptMessage } from "../support/policy.ts";

/** Script alternatives (`---`): each sample of a task follows one, chosen by its session id. */
const bash = {
  type: "function",
  function: {
    name: "bash",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};
const SCRIPT = [
  "shell: echo right > a.txt",
  "say: Wrote right.",
  "---",
  "shell: echo wrong > a.txt",
  "say: Wrote wrong.",
];
const user = { role: "user", content: scriptMessage(SCRIPT) };
const firstCommand = (sessionId?: string) =>
  planTurn({ messages: [user], tools: [bash], sessionId }).toolCalls[0]?.arguments.command;

describe("script alternatives", () => {
  it("sample i of a task takes alternative i mod count", async () => {
    const ids = await sessionIdsFor("spread", 4);
    expect(ids.map(firstCommand)).toEqual([
      "echo right > a.txt",
      "echo wrong > a.txt",
      "echo right > a.txt",
      "echo wrong > a.txt",
    ]);
  });

  it("a session stays on its alternative on later turns", () => {
    const after = [
      user,
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c", type: "function", function: { name: "bash", arguments: "{}" } }],
      },
      { role: "tool", content: "" },
    ];
    expect(planTurn({ messages: after, tools: [bash], sessionId: "spread-0" }).content).toBe("Wrote right.");
    expect(planTurn({ messages: after, tools: [bash], sessionId: "spread-1" }).content).toBe("Wrote wrong.");
  });

  it("a call without a session id (not through the proxy) takes the first", () => {
    expect(firstCommand(undefined)).toBe("echo right > a.txt");
  });

  it("a script without `---` is the same for every session", () => {
    const plain = { role: "user", content: scriptMessage(["say: One way."]) };
    for (const sessionId of [undefined, "t-0", "t-1", "free-form"]) {
      expect(planTurn({ messages: [plain], sessionId }).content).toBe("One way.");
    }
  });

  it("a session id with no sample index is hashed, stably", () => {
    const picks = ["a", "b", "c", "d", "e", "f", "g", "h"].map((id) => chooseAlternative(2, `x${id}`));
    expect(new Set(picks)).toEqual(new Set([0, 1]));
    expect(chooseAlternative(2, "xa")).toBe(picks[0]);
  });

  it("names a bad line by its line in the whole block", () => {
    const bad = { role: "user", content: scriptMessage(["say: ok", "---", "oops"]) };
    expect(planTurn({ messages: [bad], sessionId: "t-1" }).content).toMatch(/^polar-script line 3: /);
    expect(scriptAlternatives("say: a\n---\nsay: b")).toEqual([
      { body: "say: a", firstLine: 1 },
      { body: "say: b", firstLine: 3 },
    ]);
  });

  it("a summary carries the steps left of the session's own alternative", () => {
    const after = [
      user,
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c", type: "function", function: { name: "bash", arguments: "{}" } }],
      },
      { role: "tool", content: "" },
      { role: "user", content: "Your task is to create a detailed summary of the conversation so far" },
    ];
    const summary = planTurn({ messages: after, tools: [bash], sessionId: "spread-1" }).content;
    expect(summary).toContain("say: Wrote wrong.");
    expect(summary).not.toContain("right");
  });
});

describe("sampleIndexOf", () => {
  it("reads back the index sessionIdsFor put in every id, short or hashed", async () => {
    const short = await sessionIdsFor("t1", 12);
    const long = await sessionIdsFor("x".repeat(200), 12);
    for (const ids of [short, long]) expect(ids.map(sampleIndexOf)).toEqual([...Array(12).keys()]);
    expect(sampleIndexOf("no-index-here")).toBeUndefined();
  });
});
