import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * State replicas share (docs/scaling.md): which replica holds each agent's stream, the agents'
 * latest state reports, commands for an agent whose stream another replica holds, and the
 * connectivity rounds in flight (an answer may reach another replica than the question).
 */
export class Replicas1764000900000 implements MigrationInterface {
  name = 'Replicas1764000900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_sessions (
        worker_id      uuid PRIMARY KEY REFERENCES workers (id) ON DELETE CASCADE,
        replica        text NOT NULL,
        owner          text NOT NULL,
        remote_host    text,
        probe_address  text NOT NULL DEFAULT '',
        -- This connection's probe key, encrypted under the master key (SecretBox).
        probe_key      text NOT NULL DEFAULT '',
        connected_at   timestamptz NOT NULL DEFAULT now(),
        -- Renewed by the holding replica every second; older than the session TTL means it died.
        seen_at        timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX agent_sessions_replica ON agent_sessions (replica)`);
    await q.query(`CREATE SEQUENCE worker_reports_version`);
    await q.query(`
      CREATE TABLE worker_reports (
        worker_id    uuid PRIMARY KEY REFERENCES workers (id) ON DELETE CASCADE,
        reported_at  timestamptz NOT NULL,
        report       jsonb NOT NULL,
        -- Bumped on every write: replicas read what changed since the version they last saw.
        version      bigint NOT NULL DEFAULT nextval('worker_reports_version')
      )`);
    await q.query(`CREATE INDEX worker_reports_version_idx ON worker_reports (version)`);
    await q.query(`
      CREATE TABLE agent_commands (
        id          bigserial PRIMARY KEY,
        worker_id   uuid NOT NULL,
        message     jsonb NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX agent_commands_worker ON agent_commands (worker_id, id)`);
    await q.query(`
      CREATE TABLE probe_rounds (
        probe_id    uuid PRIMARY KEY,
        started_at  timestamptz NOT NULL,
        -- worker id → the target ids it was asked about; an answered worker is removed.
        asked       jsonb NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE probe_rounds`);
    await q.query(`DROP TABLE agent_commands`);
    await q.query(`DROP TABLE worker_reports`);
    await q.query(`DROP SEQUENCE worker_reports_version`);
    await q.query(`DROP TABLE agent_sessions`);
  }
}
