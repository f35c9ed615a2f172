import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Drift1764000500000 implements MigrationInterface {
  name = 'Drift1764000500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE stacks ADD COLUMN last_job_id uuid`);
    await q.query(`ALTER TABLE stacks ADD COLUMN drift_ignores jsonb NOT NULL DEFAULT '[]'`);
    await q.query(`ALTER TABLE stacks ADD COLUMN drift_status text NOT NULL DEFAULT 'unknown'`);
    await q.query(`ALTER TABLE stacks ADD COLUMN drift_checked_at timestamptz`);
    // One row per drifted (resource, field); `field` is '' for missing and unexpected.
    await q.query(`
      CREATE TABLE drift_items (
        stack_id    uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
        resource    text NOT NULL,
        kind        text NOT NULL,
        field       text NOT NULL DEFAULT '',
        worker_id   uuid,
        desired     text,
        actual      text,
        detected_at timestamptz NOT NULL,
        last_seen   timestamptz NOT NULL,
        PRIMARY KEY (stack_id, resource, kind, field)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE drift_items`);
    await q.query(`ALTER TABLE stacks DROP COLUMN drift_checked_at`);
    await q.query(`ALTER TABLE stacks DROP COLUMN drift_status`);
    await q.query(`ALTER TABLE stacks DROP COLUMN drift_ignores`);
    await q.query(`ALTER TABLE stacks DROP COLUMN last_job_id`);
  }
}
