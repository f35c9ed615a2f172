import { Global, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { AppConfig } from '../config/config.js';
import { StartupState } from '../common/startup-state.js';
import { createDataSource, runMigrationsLocked } from './data-source.js';
import { EmbeddedDatabaseState, EmbeddedVacuum } from './embedded-vacuum.js';
import { prepareStatements } from './prepared-statements.js';
import type { EmbeddedPostgres } from './embedded-postgres.js';

/**
 * The embedded database gets one connection. PGlite runs one statement at a time anyway, and
 * pglite-socket 0.2 queues each wire message on its own: outside a transaction, the Parse and Bind
 * messages of two connections' parameterized queries interleave ("unnamed prepared statement does
 * not exist", "bind message supplies 2 parameters, but prepared statement requires 3"). One
 * connection makes that impossible; the pool queues instead. Code must therefore never wait, inside
 * a transaction, for a query on another connection (it would wait for itself).
 */
export const EMBEDDED_POOL_SIZE = 1;

/**
 * Owns the database connection for the application's lifetime: starts the embedded database when
 * no DATABASE_URL is given, migrates under the advisory lock, and closes everything last at shutdown
 * (after the HTTP server has let requests in flight finish).
 */
@Injectable()
export class DatabaseConnection implements OnApplicationShutdown {
  private static readonly logger = new Logger('database');

  private constructor(
    readonly dataSource: DataSource,
    private readonly embedded: EmbeddedPostgres | undefined,
  ) {}

  static async open(config: AppConfig, startup: StartupState): Promise<DatabaseConnection> {
    // PGlite (and pglite-socket) is loaded only on the embedded path: on PostgreSQL it is never used.
    const embedded = config.databaseUrl
      ? undefined
      : await (
          await import('./embedded-postgres.js')
        ).EmbeddedPostgres.start(config.dataDir, EMBEDDED_POOL_SIZE + 4);
    try {
      const dataSource = createDataSource(
        config.databaseUrl ?? embedded!.url,
        embedded ? EMBEDDED_POOL_SIZE : config.databasePoolSize,
      );
      await dataSource.initialize();
      prepareStatements((dataSource.driver as PostgresDriver).master as Pool, embedded !== undefined);
      const ran = await runMigrationsLocked(dataSource);
      startup.markMigrated();
      this.logger.log({ migrations_applied: ran, embedded: embedded !== undefined }, 'database ready');
      return new DatabaseConnection(dataSource, embedded);
    } catch (err) {
      await embedded?.stop();
      throw err;
    }
  }

  /** The embedded database was created by this process (an empty data directory). */
  get embeddedCreated(): boolean {
    return this.embedded?.created ?? false;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    await this.embedded?.stop();
  }
}

@Global()
@Module({
  providers: [
    {
      provide: DatabaseConnection,
      inject: [AppConfig, StartupState],
      useFactory: (config: AppConfig, startup: StartupState) => DatabaseConnection.open(config, startup),
    },
    {
      provide: DataSource,
      inject: [DatabaseConnection],
      useFactory: (connection: DatabaseConnection) => connection.dataSource,
    },
    {
      provide: EmbeddedDatabaseState,
      inject: [DatabaseConnection],
      useFactory: (connection: DatabaseConnection) => new EmbeddedDatabaseState(connection.embeddedCreated),
    },
    EmbeddedVacuum,
  ],
  exports: [DataSource],
})
export class DatabaseModule {}
