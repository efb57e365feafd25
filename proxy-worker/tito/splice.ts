/**
 * Token-in-token-out for one call (docs/tito.md): prompt ids = the parent capture's prompt ids +
 * its sampled ids + the rendered delta, or a counted fallback to ordinary rendering.
 */
import type { SessionIdentity } from "../auth.ts";
import type { ChatRequest } from "../chat/types.ts";
import type { Gateway } from "../deps.ts";
import { hasMedia } from "./conversation.ts";
import { familyOf } from "./families.ts";
import { renderDelta } from "./render-delta.ts";
import { engineChatRenderer, rendererFor } from "./renderers.ts";
import { type FallbackReason, findParent } from "./session-lookup.ts";

export type SpliceOutcome =
  | { kind: "spliced"; ids: number[]; parentCaptureId: string }
  | { kind: "fallback"; reason: FallbackReason; parentCaptureId: string | null };

/** `spliced` or `fallback:<reason>`, as CaptureRecord.tito stores it. */
export function outcomeLabel(o: SpliceOutcome): string {
  return o.kind === "spliced" ? "spliced" : `fallback:${o.reason}`;
}

/**
 * An engine that does not know the channel answers from its own render: the capture must then
 * say so, or reconstruction would hold it to a parent it does not extend.
 */
export function confirmedByEngine(o: SpliceOutcome, promptIds: readonly number[] | null): SpliceOutcome {
  if (o.kind !== "spliced") return o;
  const same =
    promptIds !== null && promptIds.length === o.ids.length && o.ids.every((id, i) => promptIds[i] === id);
  return same
    ? o
    : { kind: "fallback", reason: "engine_ignored_token_prompt", parentCaptureId: o.parentCaptureId };
}

export function titoEnabled(g: Gateway, identity: SessionIdentity): boolean {
  return g.tito.forAllSessions || identity.tokenInTokenOut === true;
}

export async function spliceTokenPrompt(
  g: Gateway,
  identity: SessionIdentity,
  chat: ChatRequest,
): Promise<SpliceOutcome> {
  if (hasMedia(chat.messages)) return { kind: "fallback", reason: "media", parentCaptureId: null };
  let found: Awaited<ReturnType<typeof findParent>>;
  try {
    found = await findParent(g.store, g.tito.cache, identity, chat.messages);
  } catch (err) {
    // The store is down or a capture unreadable: the call still goes out, rendered as usual.
    g.log(`token-in-token-out lookup for session ${identity.sessionId} failed: ${(err as Error).message}`);
    return { kind: "fallback", reason: "no_prior_capture", parentCaptureId: null };
  }
  if (found.kind === "none") return { kind: "fallback", reason: found.reason, parentCaptureId: null };
  const basis = found.kind === "extends" ? found.parent : found.of;
  const basisReq = basis.chat_request as ChatRequest;
  // Both render into the prompt's head (Qwen3: the tool list in the system turn; the thinking switch).
  if (JSON.stringify(basisReq.tools ?? []) !== JSON.stringify(chat.tools ?? [])) {
    return { kind: "fallback", reason: "tools_changed", parentCaptureId: basis.capture_id };
  }
  if (
    JSON.stringify(basisReq.chat_template_kwargs ?? {}) !== JSON.stringify(chat.chat_template_kwargs ?? {})
  ) {
    return { kind: "fallback", reason: "template_kwargs_changed", parentCaptureId: basis.capture_id };
  }
  if (found.kind === "retry") {
    // The retried call's own prompt, extending the same parent.
    const parentCaptureId = basis.parent_capture_id;
    if (!parentCaptureId || !basis.prompt_token_ids)
      return { kind: "fallback", reason: "retry", parentCaptureId: null };
    return { kind: "spliced", ids: [...basis.prompt_token_ids], parentCaptureId };
  }
  const parent = found.parent;
  const { delta, answered } = found;
  const renderers = {
    template: rendererFor(g),
    engineChat: engineChatRenderer(g),
    family: () => familyOf(g, chat.model),
  };
  const rendered = await renderDelta(renderers, {
    model: chat.model,
    tools: chat.tools,
    chatTemplateKwargs: chat.chat_template_kwargs,
    delta,
    answered,
    sampled: parent.response_token_ids ?? [],
    finishReason: parent.finish_reason,
  });
  if (!rendered.ok) {
    g.log(
      `token-in-token-out: session ${identity.sessionId} falls back (${rendered.reason}): ${rendered.detail}`,
    );
    return { kind: "fallback", reason: rendered.reason, parentCaptureId: parent.capture_id };
  }
  const ids = [...(parent.prompt_token_ids ?? []), ...(parent.response_token_ids ?? []), ...rendered.ids];
  return { kind: "spliced", ids, parentCaptureId: parent.capture_id };
}
