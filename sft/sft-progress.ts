/** `polar sft` progress: a bar of sessions done with the acceptance so far; one updating line on a TTY. */
export class SftProgress {
  private done = 0;
  private accepted = 0;
  private readonly total: number;
  private readonly out: NodeJS.WritableStream & { isTTY?: boolean };
  private readonly width = 24;

  constructor(total: number, out: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr) {
    this.total = total;
    this.out = out;
  }

  record(sessionId: string, accepted: boolean, reward: number | null, status: string): void {
    this.done++;
    if (accepted) this.accepted++;
    const line = this.line();
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${line}`);
    else
      this.out.write(
        `${line} (${sessionId}: ${status}, reward ${reward ?? "-"}, ${accepted ? "accepted" : "rejected"})\n`,
      );
  }

  line(): string {
    const filled = this.total ? Math.round((this.done / this.total) * this.width) : this.width;
    const bar = `${"#".repeat(filled)}${"-".repeat(this.width - filled)}`;
    const rate = this.done ? ((this.accepted / this.done) * 100).toFixed(1) : "0.0";
    return `[${bar}] ${this.done}/${this.total} sessions, accepted ${this.accepted} (${rate}%)`;
  }

  finish(): void {
    if (this.out.isTTY && this.done > 0) this.out.write("\n");
  }
}
