import type { MigrationInterface, QueryRunner } from 'typeorm';

export class WorkerLinks1764000300000 implements MigrationInterface {
  name = 'WorkerLinks1764000300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE worker_links (
        from_id    uuid NOT NULL REFERENCES workers (id) ON DELETE CASCADE,
        to_id      uuid NOT NULL REFERENCES workers (id) ON DELETE CASCADE,
        reachable  boolean NOT NULL,
        rtt_ms     double precision,
        error      text,
        checked_at timestamptz NOT NULL,
        PRIMARY KEY (from_id, to_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE worker_links`);
  }
}
