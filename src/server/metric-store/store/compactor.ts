import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppConfig } from '../../config/config.js';
import { decodeChunk, encodeChunk } from '../chunk.js';
import { decodeBatch } from './batch-rows.js';
import { lowerBound, mergeSamples, type Samples } from './merge.js';
import { WINDOW_MS, windowOf } from './sample-store.js';

/** Batch rows folded per transaction; a backlog takes several rounds, each short. */
const BATCHES_PER_ROUND = 200;
/** A batch younger than this waits: a backfill's batches for one window then fold together. */
const SETTLE_MS = 10_000;
/** Batches that may wait in open windows; beyond it the oldest are folded down to OPEN_KEEP. */
const OPEN_CAP = 1_000;
const OPEN_KEEP = 200;

/**
 * Which batches a round may fold: those wholly before `closedBefore` (windows no longer open to
 * out-of-order writes) written at least `settleMs` ago, and any with an id up to `throughId`.
 */
export interface FoldLimit {
  closedBefore: number;
  settleMs: number;
  throughId: number;
}

/** Folds every batch (tests, and an operator's explicit flush). */
export const FOLD_EVERYTHING: FoldLimit = {
  closedBefore: Number.MAX_SAFE_INTEGER,
  settleMs: 0,
  throughId: Number.MAX_SAFE_INTEGER,
};

export interface CompactionRound {
  batches: number;
  samples: number;
  chunks: number;
}

/**
 * Folds batch rows into per-series chunks, one per two-hour window, in one transaction per round:
 * the chunks are rewritten with the batches' samples merged in (a later write wins on equal
 * timestamps) and the batches are deleted. Runs on one replica at a time (the caller holds the lease).
 *
 * A chunk is written once per window, not once per round: a batch waits until every window it
 * touches is closed (its end more than METRICS_OOO_WINDOW ago), so the open window lives in batch
 * rows, as Prometheus keeps its open window in the head. Rewriting a growing chunk every round
 * would leave a dead copy of it each time. Only a writer so heavy that more than OPEN_CAP batches
 * wait makes the oldest fold early, down to OPEN_KEEP, to bound what a read merges.
 */
@Injectable()
export class Compactor {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** What may be folded at `now`. */
  async limit(now: number, openCap = OPEN_CAP, openKeep = OPEN_KEEP): Promise<FoldLimit> {
    const closedBefore = windowOf(now - this.config.metrics.outOfOrderWindowMs);
    const [row] = await this.dataSource.query<{ n: number; through: string | null }[]>(
      `SELECT count(*)::int AS n,
              (SELECT id FROM metric_batches WHERE max_t >= $1 ORDER BY id DESC OFFSET $2 LIMIT 1) AS through
         FROM metric_batches WHERE max_t >= $1`,
      [closedBefore, openKeep],
    );
    const throughId = row.n > openCap && row.through !== null ? Number(row.through) : 0;
    return { closedBefore, settleMs: SETTLE_MS, throughId };
  }

  async round(limit: FoldLimit): Promise<CompactionRound> {
    return this.dataSource.transaction(async (m) => {
      const rows = await m.query<{ id: string; data: Buffer; samples: number }[]>(
        `SELECT id, data, samples FROM metric_batches
          WHERE (max_t < $2 AND created_at <= now() - make_interval(secs => $3::float8 / 1000)) OR id <= $4
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [BATCHES_PER_ROUND, limit.closedBefore, limit.settleMs, limit.throughId],
      );
      if (rows.length === 0) return { batches: 0, samples: 0, chunks: 0 };
      const pending = new Map<string, { seriesId: number; window: number; parts: Samples[] }>();
      for (const row of rows)
        for (const group of decodeBatch(row.data))
          for (const piece of byWindow(group)) {
            const key = `${group.seriesId}/${piece.window}`;
            const entry = pending.get(key);
            if (entry === undefined)
              pending.set(key, { seriesId: group.seriesId, window: piece.window, parts: [piece] });
            else entry.parts.push(piece);
          }
      const entries = [...pending.values()];
      const existing = await this.existingChunks(m, entries);
      const merged = entries.map((e) => {
        const old = existing.get(`${e.seriesId}/${e.window}`);
        return {
          ...e,
          samples: mergeSamples(old === undefined ? e.parts : [old, ...e.parts], -Infinity, Infinity),
        };
      });
      await m.query(
        `INSERT INTO metric_chunks (series_id, window_t, min_t, max_t, samples, data)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::int[], $6::bytea[])
         ON CONFLICT (series_id, window_t) DO UPDATE
           SET min_t = EXCLUDED.min_t, max_t = EXCLUDED.max_t, samples = EXCLUDED.samples, data = EXCLUDED.data`,
        [
          merged.map((e) => e.seriesId),
          merged.map((e) => e.window),
          merged.map((e) => e.samples.timestamps[0]),
          merged.map((e) => e.samples.timestamps[e.samples.timestamps.length - 1]),
          merged.map((e) => e.samples.timestamps.length),
          merged.map((e) => Buffer.from(encodeChunk(e.samples.timestamps, e.samples.values))),
        ],
      );
      await m.query(`DELETE FROM metric_batches WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
      return {
        batches: rows.length,
        samples: rows.reduce((n, r) => n + Number(r.samples), 0),
        chunks: merged.length,
      };
    });
  }

  private async existingChunks(
    m: EntityManager,
    entries: readonly { seriesId: number; window: number }[],
  ): Promise<Map<string, Samples>> {
    const rows = await m.query<{ series_id: string; window_t: string; data: Buffer }[]>(
      `SELECT c.series_id, c.window_t, c.data
         FROM unnest($1::bigint[], $2::bigint[]) AS k (series_id, window_t)
         JOIN metric_chunks c ON c.series_id = k.series_id AND c.window_t = k.window_t`,
      [entries.map((e) => e.seriesId), entries.map((e) => e.window)],
    );
    return new Map(rows.map((r) => [`${r.series_id}/${r.window_t}`, decodeChunk(r.data)]));
  }
}

/** A run of samples cut at window boundaries (views, no copy). */
function byWindow(samples: Samples): (Samples & { window: number })[] {
  const pieces: (Samples & { window: number })[] = [];
  let from = 0;
  while (from < samples.timestamps.length) {
    const window = windowOf(samples.timestamps[from]);
    const to = lowerBound(samples.timestamps, window + WINDOW_MS);
    pieces.push({
      window,
      timestamps: samples.timestamps.subarray(from, to),
      values: samples.values.subarray(from, to),
    });
    from = to;
  }
  return pieces;
}
