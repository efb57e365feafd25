import { describe, expect, it } from "vitest";
import { detectRoute, providerFromBody, splitTokenPrefix } from "../../proxy-worker/detect.ts";

const none = new Headers();

describe("proxy route detection", () => {
  it("routes each provider by path", () => {
    expect(detectRoute("POST", "/v1/messages", none)).toEqual({ kind: "generate", provider: "anthropic" });
    expect(detectRoute("POST", "/v1/messages/count_tokens", none)).toEqual({
      kind: "count_tokens",
      provider: "anthropic",
    });
    expect(detectRoute("POST", "/v1/chat/completions", none)).toMatchObject({ provider: "openai_chat" });
    expect(detectRoute("POST", "/v1/responses", none)).toMatchObject({ provider: "openai_responses" });
  });

  it("reads the Google model and stream-ness from the path, including models with a slash", () => {
    expect(detectRoute("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", none)).toEqual({
      kind: "generate",
      provider: "google",
      pathModel: "gemini-2.5-pro",
      pathStream: true,
    });
    expect(detectRoute("POST", "/v1/models/Qwen/Qwen3-8B:generateContent", none)).toMatchObject({
      pathModel: "Qwen/Qwen3-8B",
      pathStream: false,
    });
    expect(detectRoute("POST", "/v1beta/models/Qwen%2FQwen3-8B:countTokens", none)).toEqual({
      kind: "count_tokens",
      provider: "google",
      pathModel: "Qwen/Qwen3-8B",
    });
  });

  it("lists models in the shape the client's headers ask for", () => {
    expect(detectRoute("GET", "/v1/models", none)).toEqual({ kind: "list_models", provider: "openai_chat" });
    expect(detectRoute("GET", "/v1/models", new Headers({ "anthropic-version": "2023-06-01" }))).toEqual({
      kind: "list_models",
      provider: "anthropic",
    });
    expect(detectRoute("GET", "/v1beta/models", none)).toEqual({ kind: "list_models", provider: "google" });
  });

  it("guesses the error shape of unknown paths from header, then path", () => {
    expect(detectRoute("POST", "/v2/whatever", new Headers({ "anthropic-version": "x" }))).toEqual({
      kind: "unknown",
      provider: "anthropic",
    });
    expect(detectRoute("GET", "/v1/messages", none)).toMatchObject({ kind: "unknown" });
    expect(detectRoute("POST", "/v1beta/foo", none)).toEqual({ kind: "unknown", provider: "google" });
    expect(detectRoute("POST", "/nope", none)).toEqual({ kind: "unknown", provider: "openai_chat" });
  });

  it("detects by body shape when asked", () => {
    expect(providerFromBody({ contents: [] })).toBe("google");
    expect(providerFromBody({ input: "hi" })).toBe("openai_responses");
    expect(providerFromBody({ messages: [] })).toBeNull();
    expect(providerFromBody([1])).toBeNull();
    expect(providerFromBody("x")).toBeNull();
  });

  it("splits the /s/{token} prefix off the path", () => {
    expect(splitTokenPrefix("/s/abc.def/v1/messages")).toEqual({ token: "abc.def", path: "/v1/messages" });
    expect(splitTokenPrefix("/s/tok")).toEqual({ token: "tok", path: "/" });
    expect(splitTokenPrefix("/v1/messages")).toEqual({ path: "/v1/messages" });
  });
});
