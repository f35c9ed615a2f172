import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Auth1764000100000 implements MigrationInterface {
  name = 'Auth1764000100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE oauth_clients (
        client_id    text PRIMARY KEY,
        name         text NOT NULL,
        owner        text NOT NULL,
        scopes       text[] NOT NULL,
        secret_hash  text NOT NULL,
        disabled     boolean NOT NULL DEFAULT false,
        created_at   timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz
      )`);
    await q.query(`CREATE INDEX oauth_clients_owner_idx ON oauth_clients (owner, created_at)`);
    await q.query(`
      CREATE TABLE refresh_tokens (
        id          uuid PRIMARY KEY,
        token_hash  text NOT NULL UNIQUE,
        family_id   uuid NOT NULL,
        client_id   text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
        owner       text NOT NULL,
        scope       text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        expires_at  timestamptz NOT NULL,
        used_at     timestamptz,
        revoked_at  timestamptz
      )`);
    await q.query(`CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id)`);
    await q.query(`CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at)`);
    await q.query(`
      CREATE TABLE signing_keys (
        kid               text PRIMARY KEY,
        alg               text NOT NULL,
        public_jwk        jsonb NOT NULL,
        private_key_enc   text NOT NULL,
        created_at        timestamptz NOT NULL DEFAULT now(),
        retired_at        timestamptz,
        publish_until     timestamptz
      )`);
    await q.query(`
      CREATE TABLE audit_events (
        id          uuid PRIMARY KEY,
        at          timestamptz NOT NULL DEFAULT now(),
        action      text NOT NULL,
        outcome     text NOT NULL,
        owner       text,
        actor       text,
        target      text,
        ip          text,
        request_id  text,
        details     jsonb NOT NULL DEFAULT '{}'::jsonb
      )`);
    await q.query(`CREATE INDEX audit_events_owner_at_idx ON audit_events (owner, at DESC, id DESC)`);
    await q.query(`CREATE INDEX audit_events_at_idx ON audit_events (at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
    await q.query(`DROP TABLE signing_keys`);
    await q.query(`DROP TABLE refresh_tokens`);
    await q.query(`DROP TABLE oauth_clients`);
  }
}
