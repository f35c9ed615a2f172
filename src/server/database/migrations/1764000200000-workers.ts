import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Workers1764000200000 implements MigrationInterface {
  name = 'Workers1764000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE certificate_authorities (
        name            text PRIMARY KEY,
        certificate     text NOT NULL,
        private_key_enc text NOT NULL,
        fingerprint     text NOT NULL,
        created_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE join_tokens (
        id            text PRIMARY KEY,
        secret_hash   text NOT NULL,
        owner         text NOT NULL,
        pre_approved  boolean NOT NULL DEFAULT false,
        labels        jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_by    text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        expires_at    timestamptz NOT NULL,
        revoked_at    timestamptz,
        uses          integer NOT NULL DEFAULT 0
      )`);
    await q.query(`CREATE INDEX join_tokens_owner_idx ON join_tokens (owner, created_at)`);
    await q.query(`
      CREATE TABLE workers (
        id                     uuid PRIMARY KEY,
        owner                  text NOT NULL,
        name                   text NOT NULL,
        hostname               text NOT NULL,
        address                text NOT NULL,
        os                     text NOT NULL,
        arch                   text NOT NULL,
        version                text NOT NULL,
        driver                 text NOT NULL,
        labels                 jsonb NOT NULL DEFAULT '{}'::jsonb,
        status                 text NOT NULL,
        join_token_id          text,
        csr                    text NOT NULL,
        enrollment_secret_hash text NOT NULL,
        metrics                jsonb,
        last_heartbeat         timestamptz,
        approved_at            timestamptz,
        created_at             timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT workers_status_check
          CHECK (status IN ('healthy', 'degraded', 'unhealthy', 'unreachable', 'pending'))
      )`);
    await q.query(`CREATE INDEX workers_owner_created_idx ON workers (owner, created_at, id)`);
    await q.query(`CREATE INDEX workers_heartbeat_idx ON workers (last_heartbeat) WHERE status <> 'pending'`);
    await q.query(`
      CREATE TABLE worker_certificates (
        serial      text PRIMARY KEY,
        worker_id   uuid NOT NULL,
        not_before  timestamptz NOT NULL,
        not_after   timestamptz NOT NULL,
        certificate text NOT NULL,
        revoked_at  timestamptz,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX worker_certificates_worker_idx ON worker_certificates (worker_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE worker_certificates`);
    await q.query(`DROP TABLE workers`);
    await q.query(`DROP TABLE join_tokens`);
    await q.query(`DROP TABLE certificate_authorities`);
  }
}
