/** Where progress is written: a TTY gets one updating line. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean };

/** `polar run` progress: one updating line on a TTY, plain lines otherwise; ERROR reasons as they land. */
export class Progress {
  private done = 0;
  private rewardSum = 0;
  private rewarded = 0;
  private readonly statuses: Record<string, number> = {};
  private readonly total: number;
  private readonly out: ProgressStream;
  private readonly tty: boolean;

  constructor(total: number, out: ProgressStream = process.stderr) {
    this.total = total;
    this.out = out;
    this.tty = Boolean(out.isTTY);
  }

  record(r: { session_id: string; status: string; reward: number | null; error?: string | null }): void {
    this.done++;
    this.statuses[r.status] = (this.statuses[r.status] ?? 0) + 1;
    if (r.reward !== null) {
      this.rewardSum += r.reward;
      this.rewarded++;
    }
    const line = this.line();
    const why = r.status !== "COMPLETED" && r.error ? `: ${firstLine(r.error)}` : "";
    if (this.tty) {
      // A failure's reason gets its own line above the bar, so it is not overwritten.
      if (why) this.out.write(`\r\x1b[2K${r.session_id}: ${r.status}${why}\n`);
      this.out.write(`\r\x1b[2K${line}`);
    } else
      this.out.write(
        `${line} (${r.session_id}: ${r.status}${r.reward === null ? "" : `, reward ${r.reward}`}${why})\n`,
      );
  }

  line(): string {
    const mean = this.rewarded ? (this.rewardSum / this.rewarded).toFixed(3) : "-";
    const by = Object.entries(this.statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    return `sessions ${this.done}/${this.total} done (${by || "none yet"}); mean reward ${mean}`;
  }

  finish(): void {
    if (this.tty && this.done > 0) this.out.write("\n");
  }
}

/** At most one line of 300 characters: the full reason is in the result and the summary. */
function firstLine(text: string): string {
  const line = text.split("\n", 1)[0];
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}
