// Writing behind: rows gathered in memory are written as one batch every `flushMs`, or at
// once when the gathering says it is full, one batch after another, so that whoever waits on
// flush() knows every earlier row is written (or was given up and logged). Its users keep
// the rows their own way (billing's usage buffer rolls them up, the request log appends).
export class WriteBehind<Batch> {
  private timer: NodeJS.Timeout | null = null;
  /** The last write: flushes run one after another, so a flush ends after every earlier one. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    /** Hands over what is pending (and forgets it); null when nothing is. */
    private readonly take: () => Batch | null,
    private readonly write: (batch: Batch) => Promise<unknown>,
    private readonly failed: (error: unknown, batch: Batch) => void,
    private readonly flushMs: number,
  ) {}

  /** After rows were gathered: written now when `full`, else within flushMs. */
  added(full: boolean): void {
    if (full) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes what is pending; resolves once it (and every earlier batch) is written or given up. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.take();
    if (batch !== null) {
      this.writing = this.writing.then(() =>
        this.write(batch).then(
          () => undefined,
          (error: unknown) => this.failed(error, batch),
        ),
      );
    }
    return this.writing;
  }
}
