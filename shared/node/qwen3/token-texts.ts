/**
 * Each token's own text, from its raw bytes through one streaming UTF-8 decoder: a character
 * split across tokens appears on the token that completes it (the others get ""), so the texts
 * joined equal the whole stream decoded, and nothing shows as U+FFFD that the stream does not hold.
 *
 * `standalone` (optional, kept by the caller across calls) remembers the text of tokens whose bytes
 * are complete UTF-8 on their own: most tokens, which then skip the decoder while no character is
 * pending. A 287k-token trace decodes several times faster with it.
 */
export function tokenTexts(
  ids: readonly number[],
  tokenBytes: (id: number) => Uint8Array,
  standalone?: Map<number, string | null>,
): string[] {
  const decoder = new TextDecoder("utf-8");
  const strict = new TextDecoder("utf-8", { fatal: true });
  // Continuation bytes still expected by the character in progress.
  let need = 0;
  const texts = ids.map((id) => {
    if (need === 0 && standalone) {
      let text = standalone.get(id);
      if (text === undefined) {
        try {
          text = strict.decode(tokenBytes(id));
        } catch {
          text = null;
        }
        standalone.set(id, text);
      }
      if (text !== null) return text;
    }
    const bytes = tokenBytes(id);
    for (const b of bytes) {
      if (need > 0 && (b & 0xc0) === 0x80) need--;
      else if (b >= 0xf0) need = 3;
      else if (b >= 0xe0) need = 2;
      else if (b >= 0xc0) need = 1;
      else need = 0;
    }
    return decoder.decode(bytes, { stream: true });
  });
  const tail = decoder.decode();
  if (tail && texts.length > 0) texts[texts.length - 1] += tail;
  return texts;
}
