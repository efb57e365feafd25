/**
 * The `data:` payloads of a Server-Sent Events body, one per event, as bytes arrive. Events are
 * split on blank lines (LF or CRLF); several `data:` lines of one event join with "\n"; comments,
 * `event:`, `id:` and `retry:` lines are ignored (engines send only `data:`). A trailing event without
 * its blank line is still delivered when the body ends. `buffered` says whether the next event is
 * already here, so a caller can drain what one read brought before it decides to wait.
 */
export class SseEvents {
  private readonly decoder = new TextDecoder();
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private buffer = "";
  private data: string[] = [];
  private readonly ready: string[] = [];
  private head = 0;
  private done = false;

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }

  get buffered(): boolean {
    return this.head < this.ready.length;
  }

  /** The next event's data, or null when the body has ended. */
  async next(): Promise<string | null> {
    while (!this.buffered) {
      if (this.done) return null;
      const { value, done } = await this.reader.read();
      this.take(done ? this.decoder.decode() : this.decoder.decode(value, { stream: true }), done);
    }
    const event = this.ready[this.head++];
    if (this.head === this.ready.length) {
      this.ready.length = 0;
      this.head = 0;
    }
    return event;
  }

  private take(text: string, done: boolean): void {
    const buffer = this.buffer + text;
    let start = 0;
    for (;;) {
      const nl = buffer.indexOf("\n", start);
      if (nl < 0) break;
      const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      const line = buffer.slice(start, end);
      start = nl + 1;
      if (line === "") {
        if (this.data.length > 0) this.ready.push(this.data.join("\n"));
        this.data = [];
      } else if (line.startsWith("data:")) {
        this.data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
      }
    }
    this.buffer = buffer.slice(start);
    if (done) {
      this.done = true;
      if (this.buffer.startsWith("data:")) this.data.push(this.buffer.replace(/^data: ?/, ""));
      if (this.data.length > 0) this.ready.push(this.data.join("\n"));
      this.data = [];
      this.buffer = "";
      this.reader.releaseLock();
    }
  }
}
