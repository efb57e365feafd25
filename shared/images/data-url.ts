/** `data:<media type>[;params];base64,<payload>`, the only inline form the Chat Completions API takes. */
const DATA_URL = /^data:([^;,]*)((?:;[^;,=]+=[^;,]*)*);base64,/;

export interface DataUrl {
  /** As written (case kept); compare through `supportedImageType`. */
  mediaType: string;
  /** Everything before the payload, e.g. `data:image/png;base64,`. */
  prefix: string;
  /** The base64 text after the comma (not yet checked). */
  payload: string;
}

/** Null for anything that is not a base64 data URL (remote URLs, percent-encoded data URLs). */
export function parseDataUrl(url: string): DataUrl | null {
  if (!url.startsWith("data:")) return null;
  const m = DATA_URL.exec(url.slice(0, 256));
  if (!m) return null;
  return { mediaType: m[1], prefix: m[0], payload: url.slice(m[0].length) };
}

export function isDataUrl(url: string): boolean {
  return url.startsWith("data:");
}
