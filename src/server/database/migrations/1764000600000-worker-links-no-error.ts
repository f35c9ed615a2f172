import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Links keep only reachable, rtt_ms and checked_at: a stored socket error (ECONNREFUSED, timeout)
 * told open, closed and filtered ports apart, which made the probes a port scanner.
 */
export class WorkerLinksNoError1764000600000 implements MigrationInterface {
  name = 'WorkerLinksNoError1764000600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE worker_links DROP COLUMN error`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE worker_links ADD COLUMN error text`);
  }
}
