import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/config.js';
import { WINDOW_MS } from './sample-store.js';

export interface RetentionRound {
  /** Chunks deleted for their age, then for the size cap. */
  expired: number;
  capped: number;
  batches: number;
}

/**
 * Retention: whole two-hour windows older than METRICS_RETENTION go, and batches wholly older;
 * then, while the stored chunks exceed METRICS_MAX_BYTES, the oldest window goes. Runs on the
 * replica holding the compactor's lease.
 */
@Injectable()
export class Retention {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async round(now = Date.now()): Promise<RetentionRound> {
    const cutoff = now - this.config.metrics.retentionMs;
    const expired = await this.deleted(
      `DELETE FROM metric_chunks WHERE window_t + $1 <= $2 RETURNING 0 AS bytes`,
      [WINDOW_MS, cutoff],
    );
    const batches = await this.deleted(`DELETE FROM metric_batches WHERE max_t < $1 RETURNING 0 AS bytes`, [
      cutoff,
    ]);
    let capped = 0;
    const cap = this.config.metrics.maxBytes;
    if (cap > 0) {
      let size = await this.storedBytes();
      while (size > cap) {
        const [gone] = await this.dataSource.query<{ n: number; bytes: string }[]>(
          `WITH gone AS (
             DELETE FROM metric_chunks WHERE window_t = (SELECT min(window_t) FROM metric_chunks)
             RETURNING octet_length(data) AS bytes)
           SELECT count(*)::int AS n, coalesce(sum(bytes), 0) AS bytes FROM gone`,
        );
        if (gone.n === 0) break;
        capped += gone.n;
        size -= Number(gone.bytes);
      }
    }
    return { expired, capped, batches };
  }

  /** The store's tables with their indexes and TOAST, as the disk holds them. */
  async diskBytes(): Promise<number> {
    const [row] = await this.dataSource.query<{ bytes: string }[]>(
      `SELECT sum(pg_total_relation_size(t)) AS bytes
         FROM unnest(ARRAY['metric_series', 'metric_batches', 'metric_chunks', 'metric_metadata']::regclass[]) AS t`,
    );
    return Number(row.bytes);
  }

  /** The bytes of stored samples (chunks and batches), as the size cap counts them. */
  async storedBytes(): Promise<number> {
    const [row] = await this.dataSource.query<{ bytes: string }[]>(
      `SELECT (SELECT coalesce(sum(octet_length(data)), 0) FROM metric_chunks)
            + (SELECT coalesce(sum(octet_length(data)), 0) FROM metric_batches) AS bytes`,
    );
    return Number(row.bytes);
  }

  /** Runs a DELETE ... RETURNING and counts its rows (TypeORM answers DELETEs as [rows, count]). */
  private async deleted(sql: string, params: unknown[]): Promise<number> {
    const [row] = await this.dataSource.query<{ n: number }[]>(
      `WITH gone AS (${sql}) SELECT count(*)::int AS n FROM gone`,
      params,
    );
    return row.n;
  }
}
