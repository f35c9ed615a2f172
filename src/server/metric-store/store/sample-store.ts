import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decodeChunkInto, readChunkHeader } from '../chunk.js';
import type { MetricMetadata } from '../metadata.js';
import { decodeBatch, encodeBatch, type BatchGroup } from './batch-rows.js';
import { lowerBound, mergeSamples, type Samples } from './merge.js';

/** Chunks cover aligned windows of this length (as Prometheus's head blocks do). */
export const WINDOW_MS = 2 * 3_600_000;

/** Decoded batches kept per replica; the compactor keeps far fewer alive. */
const MAX_CACHED_BATCHES = 4096;

export const windowOf = (t: number): number => Math.floor(t / WINDOW_MS) * WINDOW_MS;

/**
 * A time range as the bigint parameters of a query take it: whole milliseconds within what a
 * double holds exactly (±2^53, some 285,000 years: the store holds nothing beyond), or null for
 * an empty or undefined range. A far-off or NaN time (an `@` or offset of a query) must not reach
 * SQL as `1e+21` or `NaN`, which PostgreSQL refuses.
 */
export function sqlRange(mint: number, maxt: number): [number, number] | null {
  const max = Number.MAX_SAFE_INTEGER;
  if (Number.isNaN(mint) || Number.isNaN(maxt) || mint > maxt || mint > max || maxt < -max) return null;
  return [Math.max(-max, Math.floor(mint)), Math.min(max, Math.ceil(maxt))];
}

interface ChunkRow {
  series_id: string;
  data: Buffer;
}

/**
 * Samples at rest: the batches written but not yet compacted, and the per-series chunks. A write is
 * one batch row (durable once the insert returns); reads merge chunks and batches, the later write
 * winning on equal timestamps.
 */
@Injectable()
export class SampleStore {
  /**
   * Decoded batches by id, oldest first: a batch never changes and lives only until the compactor
   * folds it, so entries are dropped when a read no longer sees them, or oldest first over the cap.
   */
  private readonly batchCache = new Map<number, BatchGroup[]>();

  constructor(private readonly dataSource: DataSource) {}

  /** Stores one write's samples as a batch row; resolves once it is committed. */
  async append(owner: string, groups: readonly BatchGroup[]): Promise<void> {
    let samples = 0;
    let minT = Infinity;
    let maxT = -Infinity;
    for (const g of groups) {
      if (g.timestamps.length === 0) continue;
      samples += g.timestamps.length;
      minT = Math.min(minT, g.timestamps[0]);
      maxT = Math.max(maxT, g.timestamps[g.timestamps.length - 1]);
    }
    if (samples === 0) return;
    await this.dataSource.query(
      `INSERT INTO metric_batches (owner, data, samples, min_t, max_t) VALUES ($1, $2, $3, $4, $5)`,
      [owner, Buffer.from(encodeBatch(groups)), samples, minT, maxT],
    );
  }

  async metadata(owner: string, metric?: string): Promise<MetricMetadata[]> {
    return this.dataSource.query<MetricMetadata[]>(
      `SELECT metric_name AS metric, type, help, unit FROM metric_metadata
        WHERE owner = $1 AND ($2::text IS NULL OR metric_name = $2) ORDER BY metric_name`,
      [owner, metric ?? null],
    );
  }

  async writeMetadata(owner: string, entries: readonly MetricMetadata[]): Promise<void> {
    if (entries.length === 0) return;
    const unique = [...new Map(entries.map((e) => [e.metric, e])).values()];
    await this.dataSource.query(
      `INSERT INTO metric_metadata (owner, metric_name, type, help, unit)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])
       ON CONFLICT (owner, metric_name) DO UPDATE
         SET type = EXCLUDED.type, help = EXCLUDED.help, unit = EXCLUDED.unit, updated_at = now()
         WHERE (metric_metadata.type, metric_metadata.help, metric_metadata.unit)
               IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.help, EXCLUDED.unit)`,
      [
        owner,
        unique.map((e) => e.metric),
        unique.map((e) => e.type),
        unique.map((e) => e.help),
        unique.map((e) => e.unit),
      ],
    );
  }

  /**
   * Each series' samples in [mint, maxt], ascending, one per timestamp. Batches are read before
   * chunks: a compaction committing in between then shows its samples twice (merged away), never not at all.
   * Series are decoded one at a time; `count` hears each one's sample count before the next is
   * decoded, and may throw to stop there (the query's sample limit).
   */
  async read(
    owner: string,
    seriesIds: readonly number[],
    mint: number,
    maxt: number,
    count?: (samples: number) => void,
  ): Promise<Map<number, Samples>> {
    const result = new Map<number, Samples>();
    const range = sqlRange(mint, maxt);
    if (seriesIds.length === 0 || range === null) return result;
    const wanted = new Set(seriesIds);
    const batches = await this.batchesIn(owner, range[0], range[1]);
    const chunks = await this.dataSource.query<ChunkRow[]>(
      `SELECT series_id, data FROM metric_chunks
        WHERE series_id = ANY($1::bigint[]) AND max_t >= $2 AND min_t <= $3
        ORDER BY series_id, window_t`,
      [seriesIds, range[0], range[1]],
    );
    // Chunk runs stay encoded until their series' turn.
    const runs = new Map<number, ChunkRow[]>();
    for (const run of seriesRuns(chunks)) runs.set(Number(run[0].series_id), run);
    const fromBatches = new Map<number, Samples[]>();
    // Batches oldest first: mergeSamples keeps the last part's value on equal timestamps.
    for (const groups of batches)
      for (const g of groups) {
        if (!wanted.has(g.seriesId)) continue;
        const list = fromBatches.get(g.seriesId);
        if (list === undefined) fromBatches.set(g.seriesId, [g]);
        else list.push(g);
      }
    for (const id of new Set([...runs.keys(), ...fromBatches.keys()])) {
      const run = runs.get(id);
      // Chunks first, batches last.
      const list = [...(run ? [decodeRun(run)] : []), ...(fromBatches.get(id) ?? [])];
      const merged = mergeSamples(list, mint, maxt);
      count?.(merged.timestamps.length);
      if (merged.timestamps.length > 0) result.set(id, merged);
    }
    return result;
  }

  /**
   * Which of these series have data in [mint, maxt]: a batch sample inside, or a chunk whose range
   * overlaps it (chunk granularity, as Prometheus answers series by its blocks); no chunk decoded.
   */
  async present(
    owner: string,
    seriesIds: readonly number[],
    mint: number,
    maxt: number,
  ): Promise<Set<number>> {
    const found = new Set<number>();
    const range = sqlRange(mint, maxt);
    if (seriesIds.length === 0 || range === null) return found;
    const wanted = new Set(seriesIds);
    for (const groups of await this.batchesIn(owner, range[0], range[1]))
      for (const g of groups) {
        if (!wanted.has(g.seriesId) || found.has(g.seriesId)) continue;
        const at = lowerBound(g.timestamps, mint);
        if (at < g.timestamps.length && g.timestamps[at] <= maxt) found.add(g.seriesId);
      }
    const rows = await this.dataSource.query<{ series_id: string }[]>(
      `SELECT DISTINCT series_id FROM metric_chunks
        WHERE series_id = ANY($1::bigint[]) AND max_t >= $2 AND min_t <= $3`,
      [seriesIds, range[0], range[1]],
    );
    for (const row of rows) found.add(Number(row.series_id));
    return found;
  }

  /** The owner's batches overlapping [mint, maxt], oldest first, decoded once per replica. */
  private async batchesIn(owner: string, mint: number, maxt: number): Promise<BatchGroup[][]> {
    const ids = (
      await this.dataSource.query<{ id: string }[]>(
        `SELECT id FROM metric_batches WHERE owner = $1 AND max_t >= $2 AND min_t <= $3 ORDER BY id`,
        [owner, mint, maxt],
      )
    ).map((r) => Number(r.id));
    // This read's batches are held here, not looked up in the cache afterwards: a read running
    // meanwhile (while the missing ones are fetched) may evict what this one needs.
    const found = new Map<number, BatchGroup[]>();
    const missing: number[] = [];
    for (const id of ids) {
      const cached = this.batchCache.get(id);
      if (cached === undefined) missing.push(id);
      else found.set(id, cached);
    }
    if (missing.length > 0) {
      const rows = await this.dataSource.query<{ id: string; data: Buffer }[]>(
        `SELECT id, data FROM metric_batches WHERE id = ANY($1::bigint[])`,
        [missing],
      );
      for (const row of rows) {
        const groups = decodeBatch(row.data);
        found.set(Number(row.id), groups);
        this.batchCache.set(Number(row.id), groups);
      }
    }
    this.evict(ids[0]);
    // A batch compacted since the ids were read is gone here: its samples are in the chunks read next.
    return ids.flatMap((id) => {
      const groups = found.get(id);
      return groups === undefined ? [] : [groups];
    });
  }

  /** Drops batches a read no longer saw below its oldest, then the oldest beyond the cap. */
  private evict(oldestLive: number | undefined): void {
    for (const id of this.batchCache.keys()) {
      if (oldestLive !== undefined && id >= oldestLive && this.batchCache.size <= MAX_CACHED_BATCHES) break;
      this.batchCache.delete(id);
    }
  }
}

/** Consecutive rows of the same series (the rows come ordered by series and window). */
function* seriesRuns(rows: readonly ChunkRow[]): Generator<ChunkRow[]> {
  let from = 0;
  for (let i = 1; i <= rows.length; i++)
    if (i === rows.length || rows[i].series_id !== rows[from].series_id) {
      yield rows.slice(from, i);
      from = i;
    }
}

/**
 * One series' chunks, in window order, decoded into one pair of arrays: windows do not overlap, so
 * this is the series in time order, with no per-window arrays to allocate and concatenate.
 */
function decodeRun(run: readonly ChunkRow[]): Samples {
  const total = run.reduce((n, row) => n + readChunkHeader(row.data).count, 0);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  let at = 0;
  for (const row of run) at += decodeChunkInto(row.data, timestamps, values, at);
  return { timestamps, values };
}
