import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The stacks' service output (docs/stack-logs.md): one row per line an agent shipped, kept for the
 * stack's log retention and gone with the stack. Reads go by stack and time (a window, newest
 * first) or by stack and id (a follower's next lines, in the order they arrived).
 */
export class StackLogs1764001300000 implements MigrationInterface {
  name = 'StackLogs1764001300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE stack_logs (
        id         bigserial PRIMARY KEY,
        stack_id   uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
        service    text NOT NULL,
        -- The worker that ran the service then; no reference: its lines outlive its deletion.
        worker_id  uuid NOT NULL,
        time       timestamptz NOT NULL,
        stream     text NOT NULL,
        line       text NOT NULL
      )`);
    await q.query(`CREATE INDEX stack_logs_stack_time ON stack_logs (stack_id, time, id)`);
    await q.query(`CREATE INDEX stack_logs_stack_id ON stack_logs (stack_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE stack_logs`);
  }
}
