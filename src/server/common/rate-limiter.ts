/**
 * Fixed-window counters kept in memory (per replica), bounded in size: when `maxKeys` is reached,
 * expired windows are dropped first, then the oldest keys. Used for failed-authentication limits
 * (keys: client ids with networks, and networks), the per-client request limit and certificate
 * renewals per worker.
 */
export class FixedWindowCounter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly maxKeys = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `key` may act again, or 0 when it is under the limit. */
  retryAfter(key: string): number {
    const window = this.windows.get(key);
    const now = this.now();
    if (!window || window.resetAt <= now || window.count < this.limit) return 0;
    return Math.max(1, Math.ceil((window.resetAt - now) / 1000));
  }

  /** Counts one event for `key`; returns the seconds to wait when this event went over the limit. */
  hit(key: string): number {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      if (this.windows.size >= this.maxKeys) this.evict(now);
      window = { count: 0, resetAt: now + this.windowMs };
      this.windows.delete(key);
      this.windows.set(key, window);
    }
    window.count += 1;
    return window.count > this.limit ? Math.max(1, Math.ceil((window.resetAt - now) / 1000)) : 0;
  }

  get size(): number {
    return this.windows.size;
  }

  private evict(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}
