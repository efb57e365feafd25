/** Random ids from WebCrypto (available in Workers and Node alike), for answers that have no seed. */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function randomId(prefix: string, length = 24): string {
  let out = prefix;
  while (out.length < prefix.length + length) {
    const bytes = new Uint8Array(length);
    crypto.getRandomValues(bytes);
    for (const byte of bytes) {
      // 248 = 4 * 62: dropping bytes at or above it keeps every character equally likely.
      if (byte < 248 && out.length < prefix.length + length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
