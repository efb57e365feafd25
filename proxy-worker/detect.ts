import type { Provider } from "../shared/schemas/capture.ts";

/** What a request path asks for, decided before the body is read. */
export type Route =
  | { kind: "generate"; provider: Provider; pathModel?: string; pathStream?: boolean }
  | { kind: "count_tokens"; provider: "anthropic" | "google"; pathModel?: string }
  | { kind: "list_models"; provider: Provider }
  | { kind: "unknown"; provider: Provider };

/** The part of a path before the provider route: `/s/{token}` for harnesses that cannot set a key. */
export interface SplitPath {
  token?: string;
  path: string;
}

const TOKEN_PREFIX = /^\/s\/([^/]+)(\/.*)?$/;

export function splitTokenPrefix(pathname: string): SplitPath {
  const m = TOKEN_PREFIX.exec(pathname);
  if (!m) return { path: pathname };
  return { token: safeDecode(m[1]), path: m[2] ?? "/" };
}

// Google puts the model in the path; a model with a `/` (e.g. `Qwen/Qwen3-8B`) arrives unescaped.
const GOOGLE_METHOD =
  /^\/(?:v1beta|v1|v1alpha)\/models\/(.+):(generateContent|streamGenerateContent|countTokens)$/;
const GOOGLE_MODELS = /^\/(?:v1beta|v1alpha)\/models\/?$/;

/**
 * Reference order: path first, then the `anthropic-version` header, then the body shape.
 * Header and body only decide the provider (and so the error shape) for paths no provider serves,
 * because those are answered 404 without an upstream call.
 */
export function detectRoute(method: string, path: string, headers: Headers): Route {
  const p = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  if (method === "POST") {
    if (p === "/v1/messages") return { kind: "generate", provider: "anthropic" };
    if (p === "/v1/messages/count_tokens") return { kind: "count_tokens", provider: "anthropic" };
    if (p === "/v1/chat/completions") return { kind: "generate", provider: "openai_chat" };
    if (p === "/v1/responses") return { kind: "generate", provider: "openai_responses" };
    const g = GOOGLE_METHOD.exec(p);
    if (g) {
      const pathModel = safeDecode(g[1]).replace(/^models\//, "");
      if (g[2] === "countTokens") return { kind: "count_tokens", provider: "google", pathModel };
      return {
        kind: "generate",
        provider: "google",
        pathModel,
        pathStream: g[2] === "streamGenerateContent",
      };
    }
  }
  if (method === "GET") {
    if (p === "/v1/models") {
      return {
        kind: "list_models",
        provider: headers.has("anthropic-version") ? "anthropic" : "openai_chat",
      };
    }
    if (GOOGLE_MODELS.test(p)) return { kind: "list_models", provider: "google" };
  }
  return { kind: "unknown", provider: providerFromHints(p, headers) };
}

/** Best guess of the client's API for an unroutable request, so even its 404 is in a shape it parses. */
function providerFromHints(path: string, headers: Headers): Provider {
  if (headers.has("anthropic-version")) return "anthropic";
  if (headers.has("x-goog-api-key") || path.startsWith("/v1beta/")) return "google";
  if (path.includes("/responses")) return "openai_responses";
  return "openai_chat";
}

/** Body-shape detection (step 3 of the reference), for callers that have a parsed body and no route. */
export function providerFromBody(body: unknown): Provider | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null;
  if ("contents" in body) return "google";
  if ("input" in body) return "openai_responses";
  return null;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
