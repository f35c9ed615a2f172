import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One liveness row per replica holding agent streams (docs/scaling.md): a session row is live while
 * its replica's row is fresh, so a replica renews one row a second instead of every session row
 * (10,000 agents: about 4,000 row updates a second, and their dead versions, before). The session
 * rows' own `seen_at` is no longer renewed; it stays for replicas of earlier versions during an
 * upgrade.
 */
export class AgentReplicas1764001500000 implements MigrationInterface {
  name = 'AgentReplicas1764001500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_replicas (
        replica  text PRIMARY KEY,
        seen_at  timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_replicas`);
  }
}
