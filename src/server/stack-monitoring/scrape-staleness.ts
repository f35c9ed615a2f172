import { labelsKey } from '../metric-store/labels.js';
import type { LabelSet } from '../metric-store/series.js';

/** A target not scraped for this long is forgotten (its series are past any lookback by then). */
export const FORGET_TARGET_MS = 10 * 60_000;

interface TargetSeries {
  /** The series of the last whole scrape. */
  previous: Map<string, LabelSet>;
  /** The series of the scrape under way (a scrape may arrive in several parts). */
  current: Map<string, LabelSet>;
  lastSeen: number;
}

/**
 * Prometheus's staleness for the agents' scrapes: a series that the previous scrape of a target
 * had and the next has not (the endpoint stopped exposing it, or the scrape failed) gets a stale
 * marker at that scrape's time, so a query stops returning it at once instead of for the 5-minute
 * lookback. Series with a timestamp of their own are not tracked, as in Prometheus. Held in memory
 * by the replica that receives the target's scrapes: after an agent moves to another replica, the
 * first scrape there has no previous one to compare with.
 */
export class ScrapeStaleness {
  private readonly targets = new Map<string, TargetSeries>();

  /** Number of targets tracked. */
  get size(): number {
    return this.targets.size;
  }

  /** A series in the scrape of `target` under way. */
  seen(target: string, labels: LabelSet, now: number): void {
    this.entry(target, now).current.set(labelsKey(labels), labels);
  }

  /**
   * The scrape of `target` is whole: returns the series of the previous scrape that this one did
   * not have (all of them when the scrape failed and had none).
   */
  ended(target: string, now: number): LabelSet[] {
    const entry = this.entry(target, now);
    const gone: LabelSet[] = [];
    for (const [key, labels] of entry.previous) if (!entry.current.has(key)) gone.push(labels);
    entry.previous = entry.current;
    entry.current = new Map();
    return gone;
  }

  /** Forgets targets not scraped since `before` (a service removed, an agent gone or moved). */
  forget(before: number): void {
    for (const [target, entry] of this.targets) if (entry.lastSeen < before) this.targets.delete(target);
  }

  private entry(target: string, now: number): TargetSeries {
    let entry = this.targets.get(target);
    if (entry === undefined)
      this.targets.set(target, (entry = { previous: new Map(), current: new Map(), lastSeen: now }));
    entry.lastSeen = now;
    return entry;
  }
}
