// Request bodies for the proxy benchmark: a Claude-Code-shaped Anthropic body (~48 KB, 12 tools)
// and bodies of the same content for the other three providers.

const TOOL_NAMES = [
  "Task",
  "Bash",
  "Glob",
  "Grep",
  "LS",
  "Read",
  "Edit",
  "MultiEdit",
  "Write",
  "NotebookEdit",
  "WebFetch",
  "TodoWrite",
];

const filler = (seed: string, words: number) => {
  const vocab = [
    "the",
    "file",
    "tool",
    "use",
    "when",
    "path",
    "command",
    "output",
    "must",
    "absolute",
    "lines",
  ];
  const out: string[] = [seed];
  for (let i = 0; i < words; i++) out.push(vocab[(i * 7 + seed.length) % vocab.length]);
  return out.join(" ");
};

interface Tool {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

const tools: Tool[] = TOOL_NAMES.map((name, i) => ({
  name,
  description: filler(`${name}: `, 380 + i * 10),
  schema: {
    type: "object",
    properties: {
      [name === "Bash" ? "command" : "input"]: { type: "string", description: filler("The input", 30) },
      timeout: { type: "number", description: "Optional timeout in milliseconds (max 600000)" },
      description: { type: "string", description: filler("Clear, concise description", 20) },
    },
    required: [name === "Bash" ? "command" : "input"],
    additionalProperties: false,
    $schema: "http://json-schema.org/draft-07/schema#",
  },
}));

const system = filler(
  "You are Claude Code, an interactive CLI tool that helps users with software engineering tasks.",
  700,
);
const userTask = filler("Please fix the failing test in src/parser.ts and run the suite.", 200);
const toolOutput = filler("PASS src/a.test.ts\nFAIL src/parser.test.ts", 600);

export function anthropicBody(stream: boolean): Record<string, unknown> {
  return {
    model: "claude-sonnet-4-5",
    max_tokens: 32000,
    stream,
    system: [
      { type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: "text", text: system, cache_control: { type: "ephemeral" } },
    ],
    tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.schema })),
    messages: [
      { role: "user", content: [{ type: "text", text: userTask }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "I'll run the tests first." },
          {
            type: "tool_use",
            id: "toolu_01",
            name: "Bash",
            input: { command: "npm test", description: "Run tests" },
          },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_01", content: toolOutput },
          { type: "text", text: "continue", cache_control: { type: "ephemeral" } },
        ],
      },
    ],
    metadata: { user_id: "user_bench" },
  };
}

export function openaiChatBody(stream: boolean): Record<string, unknown> {
  return {
    model: "policy",
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    max_tokens: 32000,
    tools: tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.schema },
    })),
    messages: [
      { role: "system", content: system },
      { role: "user", content: userTask },
      {
        role: "assistant",
        content: "I'll run the tests first.",
        tool_calls: [
          {
            id: "call_01",
            type: "function",
            function: {
              name: "Bash",
              arguments: JSON.stringify({ command: "npm test", description: "Run tests" }),
            },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_01", content: toolOutput },
      { role: "user", content: "continue" },
    ],
  };
}

export function openaiResponsesBody(stream: boolean): Record<string, unknown> {
  return {
    model: "policy",
    stream,
    store: false,
    instructions: system,
    include: ["reasoning.encrypted_content"],
    max_output_tokens: 32000,
    tools: tools.map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.schema,
      strict: false,
    })),
    input: [
      { type: "message", role: "user", content: [{ type: "input_text", text: userTask }] },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "I'll run the tests first." }],
      },
      {
        type: "function_call",
        call_id: "call_01",
        name: "Bash",
        arguments: JSON.stringify({ command: "npm test", description: "Run tests" }),
      },
      { type: "function_call_output", call_id: "call_01", output: toolOutput },
      { type: "message", role: "user", content: [{ type: "input_text", text: "continue" }] },
    ],
  };
}

export function googleBody(): Record<string, unknown> {
  return {
    systemInstruction: { role: "user", parts: [{ text: system }] },
    tools: [
      {
        functionDeclarations: tools.map((t) => ({
          name: t.name,
          description: t.description,
          parametersJsonSchema: t.schema,
        })),
      },
    ],
    generationConfig: { maxOutputTokens: 32000, temperature: 1 },
    contents: [
      { role: "user", parts: [{ text: userTask }] },
      {
        role: "model",
        parts: [
          { text: "I'll run the tests first." },
          {
            functionCall: {
              id: "call_01",
              name: "Bash",
              args: { command: "npm test", description: "Run tests" },
            },
          },
        ],
      },
      {
        role: "user",
        parts: [{ functionResponse: { id: "call_01", name: "Bash", response: { output: toolOutput } } }],
      },
      { role: "user", parts: [{ text: "continue" }] },
    ],
  };
}

export interface Workload {
  provider: "anthropic" | "openai_chat" | "openai_responses" | "google";
  stream: boolean;
  path: string;
  body: string;
  headers: Record<string, string>;
}

/** The request each provider's harness would send, as bytes ready for the load generator. */
export function workload(provider: Workload["provider"], stream: boolean, apiKey: string): Workload {
  switch (provider) {
    case "anthropic":
      return {
        provider,
        stream,
        path: "/v1/messages?beta=true",
        body: JSON.stringify(anthropicBody(stream)),
        headers: {
          "content-type": "application/json",
          "x-api-key": apiKey,
          "anthropic-version": "2023-06-01",
        },
      };
    case "openai_chat":
      return {
        provider,
        stream,
        path: "/v1/chat/completions",
        body: JSON.stringify(openaiChatBody(stream)),
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      };
    case "openai_responses":
      return {
        provider,
        stream,
        path: "/v1/responses",
        body: JSON.stringify(openaiResponsesBody(stream)),
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      };
    case "google":
      return {
        provider,
        stream,
        path: stream
          ? "/v1beta/models/policy:streamGenerateContent?alt=sse"
          : "/v1beta/models/policy:generateContent",
        body: JSON.stringify(googleBody()),
        headers: { "content-type": "application/json", "x-goog-api-key": apiKey },
      };
  }
}
