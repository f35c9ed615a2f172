import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { POSTGRES_ADMIN_URL, testDb } from './env.js';

/** A database of a test's own: a fresh PostgreSQL database, or a copy of the migrated PGlite template. */
export interface TestDatabase {
  /** DATA_DIR for the app (logs, and the embedded database on the pglite run). */
  dataDir: string;
  /** DATABASE_URL on the postgres run; undefined on the pglite run (the app embeds the copy). */
  databaseUrl: string | undefined;
  drop(): Promise<void>;
}

/** A copy of the migrated embedded database, whichever run this is. */
export function copyEmbeddedTemplate(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-test-'));
  cpSync(inject('pgliteTemplate'), dataDir, { recursive: true });
  return dataDir;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (testDb() === 'pglite') {
    const dataDir = copyEmbeddedTemplate();
    return {
      dataDir,
      databaseUrl: undefined,
      drop: () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })),
    };
  }
  return createPostgresDatabase();
}

/** A fresh database on the PostgreSQL server whichever run this is (for the postgres-only files). */
export async function createPostgresDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-test-'));
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dataDir,
    databaseUrl: url.toString(),
    drop: async () => {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
