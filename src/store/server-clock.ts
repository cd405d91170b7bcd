import type { Db } from "mongodb";

/**
 * The database server's clock, as seen from this instance: every due time, lease and settler
 * cutoff is written and compared on it, so instances whose own clocks differ by seconds still
 * agree on when a lease runs out or work falls due
 * (docs/decisions.md, "Storage, money and crash safety").
 *
 * The offset is measured with `hello` (its `localTime`), taking the middle of the round trip, so
 * the error is at most half a round trip; it is measured again every `resyncMs`. Until the first
 * measurement, and on a server that does not report its time, the local clock is used.
 */
export class ServerClock {
  private offsetMs = 0;
  private measured = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    /** The local clock; tests skew it. */
    private readonly localNow: () => number = Date.now,
  ) {}

  /** The server's time now (estimated). */
  now(): Date {
    return new Date(this.nowMs());
  }

  nowMs(): number {
    return this.localNow() + this.offsetMs;
  }

  /** Server time minus local time, in ms (0 until measured). */
  get offset(): number {
    return this.offsetMs;
  }

  get synced(): boolean {
    return this.measured;
  }

  /** Measures the offset once; keeps the previous one when the server cannot tell. */
  async sync(): Promise<void> {
    const sent = this.localNow();
    const reply = await this.db.admin().command({ hello: 1 });
    const received = this.localNow();
    const serverTime = reply.localTime instanceof Date ? reply.localTime.getTime() : undefined;
    if (serverTime === undefined) return;
    this.offsetMs = serverTime - (sent + received) / 2;
    this.measured = true;
  }

  /** Measures now and then every `resyncMs`, in the background; failures keep the last offset. */
  async start(resyncMs = 60_000): Promise<void> {
    await this.sync().catch(() => undefined);
    if (this.timer) return;
    this.timer = setInterval(() => void this.sync().catch(() => undefined), resyncMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
