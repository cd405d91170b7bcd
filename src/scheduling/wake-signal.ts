/**
 * The wake-up of a work loop (the delivery worker's, the notifier's): `wake` asks the loop to look
 * for work now; asked while the loop is busy, its next wait returns at once, so no wake-up is lost.
 */
export class WakeSignal {
  private requested = false;
  private resolveWait: (() => void) | undefined;

  /** Asks the loop to look for work now. */
  wake(): void {
    this.requested = true;
    this.release();
  }

  /** Lets a waiting loop go without asking for work (to check whether it should stop). */
  release(): void {
    const resolve = this.resolveWait;
    this.resolveWait = undefined;
    resolve?.();
  }

  /** Waits for `wake` or `release`; true when work was asked for, which this consumes. */
  async next(): Promise<boolean> {
    if (!this.requested) {
      await new Promise<void>((resolve) => {
        this.resolveWait = resolve;
      });
    }
    const requested = this.requested;
    this.requested = false;
    return requested;
  }
}
