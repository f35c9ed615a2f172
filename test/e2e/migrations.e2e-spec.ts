import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource, runMigrationsLocked } from '../../src/server/database/data-source.js';
import { EmbeddedPostgres } from '../../src/server/database/embedded-postgres.js';
import { MIGRATIONS } from '../../src/server/database/migrations/index.js';
import { adminQuery } from '../support/database.js';
import { POSTGRES_ADMIN_URL, testDb } from '../support/env.js';

/** Replicas starting together on an empty database: each migration must run exactly once. */
describe('migrations under the advisory lock', () => {
  let url: string;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    if (testDb() === 'postgres') {
      const name = `test_mig_${Date.now().toString(36)}`;
      await adminQuery(`CREATE DATABASE ${name}`);
      const u = new URL(POSTGRES_ADMIN_URL);
      u.pathname = `/${name}`;
      url = u.toString();
      cleanup = () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'so-mig-'));
      const embedded = await EmbeddedPostgres.start(dir, 20);
      url = embedded.url;
      cleanup = async () => {
        await embedded.stop();
        rmSync(dir, { recursive: true, force: true });
      };
    }
  });
  afterAll(() => cleanup());

  it('four replicas migrating at once apply each migration once and all succeed', async () => {
    const sources: DataSource[] = Array.from({ length: 4 }, () => createDataSource(url, 2));
    await Promise.all(sources.map((s) => s.initialize()));
    try {
      const results = await Promise.all(sources.map((s) => runMigrationsLocked(s)));
      expect(results.flat().sort()).toEqual(MIGRATIONS.map((m) => m.name).sort());
      const rows = await sources[0].query<{ name: string }[]>(
        'SELECT name FROM schema_migrations ORDER BY id',
      );
      expect(rows.map((r) => r.name)).toEqual(MIGRATIONS.map((m) => m.name));
      // And a fifth start later finds nothing to do.
      expect(await runMigrationsLocked(sources[0])).toEqual([]);
    } finally {
      await Promise.all(sources.map((s) => s.destroy()));
    }
  });
});
