import type { MigrationInterface, QueryRunner } from 'typeorm';

export class StacksJobs1764000400000 implements MigrationInterface {
  name = 'StacksJobs1764000400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE stacks (
        id                uuid PRIMARY KEY,
        owner             text NOT NULL,
        name              text NOT NULL,
        status            text NOT NULL,
        revision          integer NOT NULL,
        deployed_revision integer,
        worker_id         uuid REFERENCES workers (id) ON DELETE SET NULL,
        reserved_cpu      double precision NOT NULL DEFAULT 0,
        reserved_memory   bigint NOT NULL DEFAULT 0,
        created_at        timestamptz NOT NULL,
        updated_at        timestamptz NOT NULL,
        UNIQUE (owner, name)
      )`);
    await q.query(`CREATE INDEX stacks_worker ON stacks (worker_id) WHERE worker_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE stack_revisions (
        stack_id   uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
        revision   integer NOT NULL,
        source     text NOT NULL,
        definition jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        created_by text NOT NULL,
        PRIMARY KEY (stack_id, revision)
      )`);
    // Jobs outlive their stack (history), so stack_id carries no foreign key.
    await q.query(`
      CREATE TABLE jobs (
        id             uuid PRIMARY KEY,
        owner          text NOT NULL,
        type           text NOT NULL,
        stack_id       uuid NOT NULL,
        stack_name     text NOT NULL,
        revision       integer NOT NULL,
        worker_id      uuid,
        status         text NOT NULL,
        progress       integer NOT NULL DEFAULT 0,
        attempts       integer NOT NULL DEFAULT 0,
        max_attempts   integer NOT NULL,
        error          text,
        payload        jsonb NOT NULL,
        results        jsonb,
        timeout_ms     integer NOT NULL,
        created_at     timestamptz NOT NULL,
        dispatched_at  timestamptz,
        started_at     timestamptz,
        finished_at    timestamptz,
        updated_at     timestamptz NOT NULL,
        created_by     text NOT NULL
      )`);
    await q.query(`CREATE INDEX jobs_queue ON jobs (created_at) WHERE status = 'queued'`);
    await q.query(`CREATE INDEX jobs_owner_created ON jobs (owner, created_at DESC, id DESC)`);
    await q.query(
      `CREATE INDEX jobs_worker_active ON jobs (worker_id) WHERE status IN ('dispatched', 'running', 'cancelling')`,
    );
    // At most one unfinished job per stack: the database decides between racing deploys.
    await q.query(
      `CREATE UNIQUE INDEX jobs_one_active_per_stack ON jobs (stack_id) WHERE status IN ('queued', 'dispatched', 'running', 'cancelling')`,
    );
    await q.query(`
      CREATE TABLE job_logs (
        id     bigserial PRIMARY KEY,
        job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        time   timestamptz NOT NULL,
        line   text NOT NULL
      )`);
    await q.query(`CREATE INDEX job_logs_job ON job_logs (job_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE job_logs`);
    await q.query(`DROP TABLE jobs`);
    await q.query(`DROP TABLE stack_revisions`);
    await q.query(`DROP TABLE stacks`);
  }
}
