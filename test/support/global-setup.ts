import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDataSource, runMigrationsLocked } from '../../src/server/database/data-source.js';
import { EmbeddedPostgres } from '../../src/server/database/embedded-postgres.js';
import { POSTGRES_ADMIN_URL, testDb } from './env.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}

/**
 * Once per run: for PGlite, a migrated template data directory that every test file copies
 * (creating a PGlite database costs seconds); for PostgreSQL, a check that the server answers.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  // Both runs get the template: embedded-only behaviour (the data directory lock) is tested in each.
  const templateRoot = mkdtempSync(join(tmpdir(), 'so-template-'));
  const embedded = await EmbeddedPostgres.start(templateRoot, 4);
  const dataSource = createDataSource(embedded.url, 2);
  await dataSource.initialize();
  await runMigrationsLocked(dataSource);
  await dataSource.destroy();
  await embedded.stop();
  if (testDb() === 'postgres') {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    try {
      await client.connect();
      await client.query('SELECT 1');
    } catch (err) {
      throw new Error(
        `TEST_DB=postgres needs a PostgreSQL server at ${POSTGRES_ADMIN_URL}: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  // The docker driver's tests need podman serving the Docker Engine API; the script installs and
  // starts it when missing and returns at once when it already answers.
  const script = fileURLToPath(new URL('../../scripts/podman-setup.sh', import.meta.url));
  try {
    execFileSync('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 300_000 });
  } catch (err) {
    throw new Error(
      `scripts/podman-setup.sh failed (the docker driver tests need podman): ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  project.provide('pgliteTemplate', templateRoot);
  return () => rmSync(templateRoot, { recursive: true, force: true });
}
