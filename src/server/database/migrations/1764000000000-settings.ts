import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Settings1764000000000 implements MigrationInterface {
  name = 'Settings1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE settings (
        key        text PRIMARY KEY,
        value      jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE settings`);
  }
}
