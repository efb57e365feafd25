/**
 * Item ids derived from the upstream ids, so the same upstream answer always encodes to the same
 * bytes (fixtures, retries) and a call's `fc_` id is traceable to its `call_id`.
 */
function safeId(raw: string): string {
  const cleaned = raw.replace(/[^A-Za-z0-9_-]/g, "");
  return cleaned === "" ? "0" : cleaned;
}

export function responseIds(chatId: string) {
  const suffix = safeId(chatId.replace(/^chatcmpl[-_]/, ""));
  return {
    response: `resp_${suffix}`,
    message: `msg_${suffix}`,
    reasoning: `rs_${suffix}`,
    call: (callId: string, prefix: "fc" | "ctc" | "lsh") => `${prefix}_${safeId(callId)}`,
  };
}
