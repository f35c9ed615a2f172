import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The OAuth clients a stack's monitoring services use against the orchestrator (the metrics store's
 * remote write, the dashboard's data source), one per role, with the secret sealed by SecretBox so
 * every deploy can hand it to the agent again. A row goes with its stack, and with its client when
 * an operator deletes that (the next deploy makes a new one).
 */
export class StackMonitoringClients1764001200000 implements MigrationInterface {
  name = 'StackMonitoringClients1764001200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE stack_monitoring_clients (
        stack_id   uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
        role       text NOT NULL CHECK (role IN ('metrics_writer', 'metrics_reader')),
        client_id  text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
        secret_enc text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (stack_id, role)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE stack_monitoring_clients`);
  }
}
