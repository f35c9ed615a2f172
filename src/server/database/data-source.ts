import { DataSource, MigrationExecutor } from 'typeorm';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';
import { QueryTimingSubscriber } from './query-timing.subscriber.js';

/** Arbitrary but fixed: the advisory lock key every replica takes while migrating. */
export const MIGRATION_LOCK_KEY = 726_352_630;

export function createDataSource(url: string, poolSize: number): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    subscribers: [QueryTimingSubscriber],
    synchronize: false,
    migrationsRun: false,
    logging: false,
    applicationName: 'stack-orchestrator',
    poolSize,
    extra: { connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 },
  });
}

/**
 * Runs pending migrations in one transaction that first takes a transaction-level advisory lock, so
 * replicas starting together migrate one after the other and the later ones find nothing to do.
 * The single transaction matters on the embedded database too: every pglite-socket connection
 * shares one backend (advisory locks do not exclude there), but the socket server runs one
 * connection's transaction at a time.
 */
export async function runMigrationsLocked(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    try {
      await runner.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = 'all';
      const ran = await executor.executePendingMigrations();
      await runner.commitTransaction();
      return ran.map((m) => m.name);
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      throw err;
    }
  } finally {
    await runner.release();
  }
}
