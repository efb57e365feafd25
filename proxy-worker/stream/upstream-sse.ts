/**
 * The `data:` payloads of a Server-Sent Events body, handed to `onEvent` one per event as text is
 * pushed in. Events are split on blank lines (LF or CRLF); several `data:` lines of one event join
 * with "\n"; comments, `event:`, `id:` and `retry:` lines are ignored (engines send only `data:`). A
 * trailing event without its blank line is still delivered by `end`. Every event of one `push` is
 * delivered before it returns, so a caller can decide what to do after a read, not after each event.
 *
 * Push rather than pull: an engine sends one event per sampled token, and a promise per event (a
 * reader's `read()`, an async iterator) costs more than the event's own parsing (BENCHMARKS.md).
 */
export class SseParser {
  /** Text after the last line break, waiting for the rest of its line. */
  private rest = "";
  /** The event being read: its data lines so far, or null before its first. */
  private data: string | null = null;

  private readonly onEvent: (data: string) => void;

  constructor(onEvent: (data: string) => void) {
    this.onEvent = onEvent;
  }

  push(text: string): void {
    const buf = this.rest === "" ? text : this.rest + text;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf("\n", start);
      if (nl < 0) break;
      const end = nl > start && buf.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      if (end === start) this.emit();
      // Sliced from the buffer as it stands: no string per line, only per payload.
      else if (buf.startsWith("data:", start))
        this.line(buf, buf.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end);
      start = nl + 1;
    }
    this.rest = start === 0 ? buf : buf.slice(start);
  }

  /** The body ended: a last event without its blank line is delivered. */
  end(): void {
    const rest = this.rest;
    this.rest = "";
    if (rest.startsWith("data:")) this.line(rest, rest.charCodeAt(5) === 32 ? 6 : 5, rest.length);
    this.emit();
  }

  private line(buf: string, from: number, to: number): void {
    const payload = buf.slice(from, to);
    this.data = this.data === null ? payload : `${this.data}\n${payload}`;
  }

  private emit(): void {
    const data = this.data;
    if (data === null) return;
    this.data = null;
    this.onEvent(data);
  }
}
