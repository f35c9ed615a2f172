import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The metric store (docs/metric-store-design.md). Series are per owner (a tenant sees only its own)
 * and identified by their canonical label set. An acknowledged write is one compressed batch row;
 * a compactor folds batches into one chunk per series and two-hour window, so the data at rest is a
 * few bytes per sample and a query reads a handful of rows per series.
 */
export class MetricStore1764000800000 implements MigrationInterface {
  name = 'MetricStore1764000800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE metric_series (
        id          bigserial PRIMARY KEY,
        owner       text NOT NULL,
        -- The canonical label set (names sorted, escaped), unique per owner.
        key         text NOT NULL,
        metric_name text NOT NULL,
        labels      jsonb NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        UNIQUE (owner, key)
      )`);
    await q.query(`CREATE INDEX metric_series_owner_name ON metric_series (owner, metric_name)`);
    await q.query(`
      CREATE TABLE metric_batches (
        id         bigserial PRIMARY KEY,
        owner      text NOT NULL,
        data       bytea NOT NULL,
        samples    integer NOT NULL,
        min_t      bigint NOT NULL,
        max_t      bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE metric_chunks (
        series_id bigint NOT NULL REFERENCES metric_series (id) ON DELETE CASCADE,
        -- Start of the chunk's two-hour window, in ms since the epoch.
        window_t  bigint NOT NULL,
        min_t     bigint NOT NULL,
        max_t     bigint NOT NULL,
        samples   integer NOT NULL,
        data      bytea NOT NULL,
        PRIMARY KEY (series_id, window_t)
      )`);
    await q.query(`CREATE INDEX metric_chunks_window ON metric_chunks (window_t)`);
    // Chunks and batches are compressed already: keep PostgreSQL from trying again (pglz).
    await q.query(`ALTER TABLE metric_chunks ALTER COLUMN data SET STORAGE EXTERNAL`);
    await q.query(`ALTER TABLE metric_batches ALTER COLUMN data SET STORAGE EXTERNAL`);
    await q.query(`
      CREATE TABLE metric_metadata (
        owner       text NOT NULL,
        metric_name text NOT NULL,
        type        text NOT NULL,
        help        text NOT NULL DEFAULT '',
        unit        text NOT NULL DEFAULT '',
        updated_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, metric_name)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE metric_metadata`);
    await q.query(`DROP TABLE metric_chunks`);
    await q.query(`DROP TABLE metric_batches`);
    await q.query(`DROP TABLE metric_series`);
  }
}
