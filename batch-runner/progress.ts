/** `polar run` progress: one updating line on a TTY, plain lines otherwise. */
export class Progress {
  private done = 0;
  private rewardSum = 0;
  private rewarded = 0;
  private readonly statuses: Record<string, number> = {};
  private readonly total: number;
  private readonly out: NodeJS.WriteStream;
  private readonly tty: boolean;

  constructor(total: number, out: NodeJS.WriteStream = process.stderr) {
    this.total = total;
    this.out = out;
    this.tty = Boolean(out.isTTY);
  }

  record(r: { session_id: string; status: string; reward: number | null }): void {
    this.done++;
    this.statuses[r.status] = (this.statuses[r.status] ?? 0) + 1;
    if (r.reward !== null) {
      this.rewardSum += r.reward;
      this.rewarded++;
    }
    const line = this.line();
    if (this.tty) this.out.write(`\r\x1b[2K${line}`);
    else
      this.out.write(
        `${line} (${r.session_id}: ${r.status}${r.reward === null ? "" : `, reward ${r.reward}`})\n`,
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
