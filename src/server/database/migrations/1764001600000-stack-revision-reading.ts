import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How a revision's file was read (docs/compose.md): its format and the request's name, kit, variant
 * and profiles, and the Compose variables it was sent with, sealed with the master key (they may
 * hold passwords). Revisions from before are our format, read without any.
 */
export class StackRevisionReading1764001600000 implements MigrationInterface {
  name = 'StackRevisionReading1764001600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE stack_revisions ADD COLUMN reading jsonb, ADD COLUMN variables_sealed text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE stack_revisions DROP COLUMN reading, DROP COLUMN variables_sealed`);
  }
}
