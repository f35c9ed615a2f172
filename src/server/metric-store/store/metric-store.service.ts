import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge } from 'prom-client';
import { METRIC } from '../../metrics/metric-names.js';
import { AppConfig } from '../../config/config.js';
import type { LabelSet, Matcher, Queryable, SeriesSamples } from '../series.js';
import type { BatchGroup } from './batch-rows.js';
import type { MetricMetadata } from '../metadata.js';
import { concat, sortSamples, type Samples } from './merge.js';
import { SampleStore } from './sample-store.js';
import { SeriesIndex } from './series-index.js';

/** One series of a write: its label set (valid, sorted) and samples in any order. */
export interface IncomingSeries {
  key: string;
  labels: LabelSet;
  timestamps: ArrayLike<number>;
  values: ArrayLike<number>;
}

export interface WriteResult {
  /** Samples stored. */
  stored: number;
  /** Older than their series' newest by more than METRICS_OOO_WINDOW: dropped. */
  outOfOrder: number;
  /** Older than METRICS_RETENTION: dropped. */
  tooOld: number;
}

/**
 * The metric store's front: writes (durable when they resolve) and reads for one owner. A tenant
 * sees and writes only its own series. Out-of-order samples are judged against the newest sample
 * this replica has seen of the series (a sample from another replica's write is judged there).
 */
@Injectable()
export class MetricStoreService {
  private readonly newest = new Map<number, number>();

  constructor(
    private readonly index: SeriesIndex,
    private readonly samples: SampleStore,
    private readonly config: AppConfig,
    @InjectMetric(METRIC.metricStoreSamples) private readonly stored: Counter,
    @InjectMetric(METRIC.metricStoreDropped) private readonly dropped: Counter,
    @InjectMetric(METRIC.metricStoreSeries) private readonly seriesGauge: Gauge,
  ) {}

  async write(owner: string, series: readonly IncomingSeries[], now = Date.now()): Promise<WriteResult> {
    const ids = await this.index.resolve(owner, series);
    const oldest = now - this.config.metrics.retentionMs;
    const window = this.config.metrics.outOfOrderWindowMs;
    const result: WriteResult = { stored: 0, outOfOrder: 0, tooOld: 0 };
    const batch: BatchGroup[] = [];
    const keep = (seriesId: number, timestamps: Float64Array, values: Float64Array) => {
      const floor = Math.max(oldest, (this.newest.get(seriesId) ?? -Infinity) - window);
      let from = 0;
      // Ascending: what is below the floor is a prefix.
      while (from < timestamps.length && timestamps[from] < floor) {
        if (timestamps[from] < oldest) result.tooOld++;
        else result.outOfOrder++;
        from++;
      }
      if (from === timestamps.length) return;
      batch.push({
        seriesId,
        timestamps: from === 0 ? timestamps : timestamps.subarray(from),
        values: from === 0 ? values : values.subarray(from),
      });
      result.stored += timestamps.length - from;
    };
    // Most writes (heartbeats, scrapes, remote write) carry each series once, its samples in
    // order: copied as they are. Otherwise a series' parts are merged and sorted first. Values stay
    // in Float64Arrays throughout: a stale marker passed through a plain array may stop being one.
    const once = new Set(ids).size === ids.length;
    const merged = new Map<number, Samples[]>();
    series.forEach((s, i) => {
      const part = { timestamps: float64(s.timestamps), values: float64(s.values) };
      if (once && ascending(part.timestamps)) return keep(ids[i], part.timestamps, part.values);
      const list = merged.get(ids[i]);
      if (list === undefined) merged.set(ids[i], [part]);
      else list.push(part);
    });
    for (const [seriesId, parts] of merged) {
      // Sorted by time, the later of equal timestamps kept.
      const sorted = sortSamples(concat(parts));
      keep(seriesId, sorted.timestamps, sorted.values);
    }
    await this.samples.append(owner, batch);
    this.stored.inc(result.stored);
    if (result.outOfOrder > 0) this.dropped.inc({ reason: 'out_of_order' }, result.outOfOrder);
    if (result.tooOld > 0) this.dropped.inc({ reason: 'too_old' }, result.tooOld);
    this.seriesGauge.set(this.index.size);
    for (const g of batch)
      this.newest.set(
        g.seriesId,
        Math.max(this.newest.get(g.seriesId) ?? -Infinity, g.timestamps[g.timestamps.length - 1]),
      );
    return result;
  }

  /** What the owner's metrics are (TYPE, HELP, UNIT from remote write or text import), by name. */
  async metadata(owner: string, metric?: string): Promise<MetricMetadata[]> {
    return this.samples.metadata(owner, metric);
  }

  /** Records metric metadata; the latest description of a metric wins. */
  async writeMetadata(owner: string, entries: readonly MetricMetadata[]): Promise<void> {
    await this.samples.writeMetadata(owner, entries);
  }

  /** Series known (every owner), after catching up with other replicas' writes. */
  async seriesCount(): Promise<number> {
    await this.index.catchUp();
    this.seriesGauge.set(this.index.size);
    return this.index.size;
  }

  /** The engine's view of one owner's data. */
  queryable(owner: string): Queryable {
    return {
      select: (matchers, mint, maxt, count) => this.select(owner, matchers, mint, maxt, count),
    };
  }

  /**
   * Label sets of the owner's series matching every matcher with samples in [mint, maxt], without
   * loading their samples (the series and labels APIs over all of time must not).
   */
  async seriesLabels(
    owner: string,
    matchers: readonly Matcher[],
    mint: number,
    maxt: number,
  ): Promise<LabelSet[]> {
    const candidates = await this.index.select(owner, matchers);
    const present = await this.samples.present(
      owner,
      candidates.map((s) => s.id),
      mint,
      maxt,
    );
    return candidates.filter((s) => present.has(s.id)).map((s) => s.labels);
  }

  /**
   * The owner's series matching every matcher with samples in [mint, maxt] (throws
   * MetricInputError); `count` hears each series' sample count as it is decoded (Queryable).
   */
  async select(
    owner: string,
    matchers: readonly Matcher[],
    mint: number,
    maxt: number,
    count?: (samples: number) => void,
  ): Promise<SeriesSamples[]> {
    const candidates = await this.index.select(owner, matchers);
    const read = await this.samples.read(
      owner,
      candidates.map((s) => s.id),
      mint,
      maxt,
      count,
    );
    return candidates.flatMap((s) => {
      const found = read.get(s.id);
      return found === undefined
        ? []
        : [{ labels: s.labels, timestamps: found.timestamps, values: found.values }];
    });
  }
}

/**
 * As a Float64Array: one is taken as it is (the write only reads it, and the callers' arrays are
 * theirs alone: a request's decoded samples, a flushed buffer's), anything else copied.
 */
const float64 = (a: ArrayLike<number>): Float64Array =>
  a instanceof Float64Array ? a : Float64Array.from(a);

/** Strictly ascending (no two samples at one time). */
function ascending(timestamps: ArrayLike<number>): boolean {
  for (let i = 1; i < timestamps.length; i++) if (!(timestamps[i] > timestamps[i - 1])) return false;
  return true;
}
