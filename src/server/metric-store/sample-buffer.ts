import { labelsKey } from './labels.js';
import { setStale, type LabelSet } from './series.js';
import type { IncomingSeries, MetricStoreService } from './store/metric-store.service.js';

/**
 * One series' samples so far, in typed arrays that grow: a plain array of numbers may not keep a
 * stale marker's NaN payload (series.ts).
 */
interface Collected {
  key: string;
  labels: LabelSet;
  timestamps: Float64Array;
  values: Float64Array;
  n: number;
}

/**
 * Series per write at most. A write's series lookup, grouping and encoding run without a pause:
 * at 10,000 agents one flush holds 20,000 series, which as one write kept the event loop from
 * the agents' heartbeats for 150-200 ms every 5 s (their acks' p99 over 100 ms); in slices of
 * 2,000 each took 15-30 ms, back to back, and the flush's second still showed four scavenges and
 * the window's worst loop delays (docs/benchmarks.md, session 18). Now smaller slices, spaced.
 */
export const FLUSH_SLICE_SERIES = 1_000;
/** The pause between one slice's write and the next: heartbeats and the GC get the loop between. */
export const FLUSH_SLICE_GAP_MS = 25;

/**
 * Samples the service records itself (heartbeats, the agents' scrapes), held in memory by owner
 * and series and written in a few batches per owner: one write per sample would be a row each. Holds
 * at most `maxSamples`; past it new samples are dropped and counted until the next flush.
 */
export class SampleBuffer {
  private byOwner = new Map<string, Map<string, Collected>>();
  private held = 0;
  /** Samples dropped since the last flush. */
  dropped = 0;

  constructor(private readonly maxSamples: number) {}

  get size(): number {
    return this.held;
  }

  /** Adds one sample of a canonical label set; false when the buffer is full (counted). */
  add(owner: string, labels: LabelSet, timestamp: number, value: number): boolean {
    return this.addKeyed(owner, labelsKey(labels), labels, timestamp, value);
  }

  /** As `add`, with the label set's key (`labelsKey(labels)`) already known. */
  addKeyed(owner: string, key: string, labels: LabelSet, timestamp: number, value: number): boolean {
    const s = this.slot(owner, key, labels);
    if (s === undefined) return false;
    s.timestamps[s.n] = Math.round(timestamp);
    s.values[s.n++] = value;
    return true;
  }

  /** Adds a stale marker (Prometheus's exact pattern): the series ended at `timestamp`. */
  addStale(owner: string, labels: LabelSet, timestamp: number): boolean {
    const s = this.slot(owner, labelsKey(labels), labels);
    if (s === undefined) return false;
    s.timestamps[s.n] = Math.round(timestamp);
    setStale(s.values, s.n++);
    return true;
  }

  /** The series' entry with room for one more sample, counted as held; undefined when full. */
  private slot(owner: string, key: string, labels: LabelSet): Collected | undefined {
    if (this.held >= this.maxSamples) {
      this.dropped++;
      return undefined;
    }
    let series = this.byOwner.get(owner);
    if (series === undefined) this.byOwner.set(owner, (series = new Map<string, Collected>()));
    let s = series.get(key);
    if (s === undefined)
      // Room for one: most series get one sample between flushes (a heartbeat every 10 s, a flush
      // every 5 s), handed over as they are.
      series.set(
        key,
        (s = { key, labels, timestamps: new Float64Array(1), values: new Float64Array(1), n: 0 }),
      );
    else if (s.n === s.timestamps.length) {
      const timestamps = new Float64Array(s.n * 2);
      const values = new Float64Array(s.n * 2);
      timestamps.set(s.timestamps);
      values.set(s.values);
      [s.timestamps, s.values] = [timestamps, values];
    }
    this.held++;
    return s;
  }

  /**
   * Writes what is held, per owner in batches of at most FLUSH_SLICE_SERIES series, one after the
   * other (a failed write does not keep the others from theirs; the first failure is thrown after);
   * answers how many samples were dropped meanwhile.
   */
  async flush(store: MetricStoreService): Promise<number> {
    const taken = this.byOwner;
    const dropped = this.dropped;
    this.byOwner = new Map();
    this.held = 0;
    this.dropped = 0;
    let failure: Error | undefined;
    let first = true;
    for (const [owner, series] of taken) {
      const all: IncomingSeries[] = [];
      for (const s of series.values())
        all.push({
          key: s.key,
          labels: s.labels,
          // Full arrays as they are; else a copy of their part (a small copy stays in V8's heap,
          // where a subarray view would move the buffer out of it).
          timestamps: s.n === s.timestamps.length ? s.timestamps : s.timestamps.slice(0, s.n),
          values: s.n === s.values.length ? s.values : s.values.slice(0, s.n),
        });
      for (let from = 0; from < all.length; from += FLUSH_SLICE_SERIES) {
        if (!first) await new Promise((resolve) => setTimeout(resolve, FLUSH_SLICE_GAP_MS));
        first = false;
        await store
          .write(owner, all.slice(from, from + FLUSH_SLICE_SERIES))
          .catch((err: unknown) => (failure ??= err instanceof Error ? err : new Error(String(err))));
      }
    }
    if (failure !== undefined) throw failure;
    return dropped;
  }
}
