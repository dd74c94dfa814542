/**
 * Polling while a panel is open (protocol APP_STATUS_POLL_MS): one call at a time, none while
 * the tab is hidden (one at once when it shows again), none after stop().
 */
export class VisiblePoller {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private inFlight = false;
  private readonly onVisibility = () => {
    if (!this.running) return;
    if (document.hidden) this.clear();
    else {
      this.clear();
      void this.tick();
    }
  };

  constructor(
    private readonly poll: () => Promise<unknown>,
    private readonly intervalMs: number,
  ) {}

  /** Starts polling; the first call after one interval (the caller has just loaded). */
  start(): void {
    if (this.running) return;
    this.running = true;
    document.addEventListener('visibilitychange', this.onVisibility);
    this.schedule();
  }

  stop(): void {
    this.running = false;
    this.clear();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  get active(): boolean {
    return this.running;
  }

  private clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.clear();
    if (!this.running || document.hidden) return;
    this.timer = setTimeout(() => void this.tick(), this.intervalMs);
  }

  private async tick(): Promise<void> {
    if (!this.running || this.inFlight || document.hidden) return;
    this.inFlight = true;
    try {
      await this.poll();
    } catch {
      // The panel shows the last error of its own reads; polling goes on.
    } finally {
      this.inFlight = false;
      this.schedule();
    }
  }
}
