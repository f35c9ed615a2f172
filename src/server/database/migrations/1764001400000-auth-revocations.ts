import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revocations every replica must apply to its verified-token cache (docs/security.md): a client
 * disabled or deleted, a refresh family revoked. Rows are read by time and pruned once no access
 * token they concern can still be valid.
 */
export class AuthRevocations1764001400000 implements MigrationInterface {
  name = 'AuthRevocations1764001400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE auth_revocations (
        id         bigserial PRIMARY KEY,
        kind       text NOT NULL CHECK (kind IN ('client', 'family')),
        subject    text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX auth_revocations_created_at ON auth_revocations (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE auth_revocations`);
  }
}
