import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedVacuum } from '../../src/server/database/embedded-vacuum.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { testDb } from '../support/env.js';

/**
 * PGlite has no autovacuum (it runs PostgreSQL as one backend without background processes): the
 * service vacuums and analyzes the embedded database itself. On PostgreSQL it leaves that to the
 * server's own autovacuum.
 */
describe('embedded database maintenance', () => {
  let t: TestApp;
  let db: DataSource;

  const counter = async (operation: string): Promise<number> => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const match = new RegExp(
      `^stack_embedded_vacuum_operations_total\\{operation="${operation}"\\} (\\d+)$`,
      'm',
    ).exec(text);
    return match ? Number(match[1]) : 0;
  };
  const one = async <T>(sql: string): Promise<T> => (await db.query<T[]>(sql))[0];

  beforeAll(async () => {
    t = await startTestApp({ env: { EMBEDDED_VACUUM_INTERVAL: '1s' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
  });

  if (testDb() === 'pglite') {
    it('vacuums and analyzes every table of the service once after start', async () => {
      await eventually(() =>
        t.logs.records().some((r) => r.msg === 'embedded database vacuumed and analyzed after start'),
      );
      // Every table of the service's schema, whatever PGlite's counters (lost at each restart) say.
      const never = await db.query<{ relname: string }[]>(
        `SELECT relname FROM pg_stat_user_tables WHERE vacuum_count = 0 OR analyze_count = 0`,
      );
      expect(never).toEqual([]);
      expect(await counter('vacuum')).toBeGreaterThanOrEqual(30);
    });

    it("vacuums and analyzes a table once its changes pass autovacuum's thresholds", async () => {
      await db.query(`CREATE TABLE vacuum_probe (id int PRIMARY KEY, owner text NOT NULL, v int NOT NULL)`);
      await db.query(`CREATE INDEX vacuum_probe_owner ON vacuum_probe (owner)`);
      await db.query(`INSERT INTO vacuum_probe SELECT g, 'default', 0 FROM generate_series(1, 2000) g`);
      // Non-HOT updates (the indexed column changes): 4,000 dead row versions in the table and index.
      for (const owner of ['a', 'b'])
        await db.query(`UPDATE vacuum_probe SET owner = $1, v = v + 1`, [owner]);
      const vacuumsBefore = await counter('vacuum');

      // Until a pass after the second update has run (one between the updates may run too).
      await eventually(async () => {
        const row = await one<{ vacuum_count: string; analyze_count: string; n_dead_tup: string }>(
          `SELECT vacuum_count, analyze_count, n_dead_tup FROM pg_stat_user_tables WHERE relname = 'vacuum_probe'`,
        );
        const owner = await db.query<{ most_common_vals: string }[]>(
          `SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'vacuum_probe' AND attname = 'owner'`,
        );
        return (
          Number(row.vacuum_count) > 0 &&
          Number(row.analyze_count) > 0 &&
          Number(row.n_dead_tup) === 0 &&
          owner[0]?.most_common_vals === '{b}'
        );
      }, 20_000);
      // The planner now knows the table: its size, and the one value of `owner`.
      const cls = await one<{ reltuples: number }>(
        `SELECT reltuples FROM pg_class WHERE relname = 'vacuum_probe'`,
      );
      expect(cls.reltuples).toBe(2000);
      const stats = await one<{ most_common_vals: string }>(
        `SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'vacuum_probe' AND attname = 'owner'`,
      );
      expect(stats.most_common_vals).toBe('{b}');
      expect(await counter('vacuum')).toBeGreaterThan(vacuumsBefore);
      expect(await counter('analyze')).toBeGreaterThan(0);

      // Quiet afterwards: a table below the thresholds is left alone.
      const vacuum = t.app.get(EmbeddedVacuum);
      expect((await vacuum.pass()).map((task) => task.table)).not.toContain('vacuum_probe');
      await db.query(`DROP TABLE vacuum_probe`);
    });

    it('freezes every table, the catalogs included, older than autovacuum_freeze_max_age', async () => {
      const vacuum = t.app.get(EmbeddedVacuum);
      try {
        // PGlite runs in single-user mode, where PostgreSQL does not stop writes before transaction
        // IDs wrap around: freezing in time is all that keeps old rows visible.
        await db.query(`CREATE TABLE xid_burner (id int)`);
        for (let i = 0; i < 1200; i++) await db.query(`INSERT INTO xid_burner VALUES ($1)`, [i]);
        const before = await one<{ age: number }>(
          `SELECT age(datfrozenxid) FROM pg_database WHERE datname = current_database()`,
        );
        expect(before.age).toBeGreaterThan(1000);

        // Lowered in the same tick as the pass starts: the 1 s passes keep the database's own limit.
        vacuum.limits = { freezeMaxAge: 1000 };
        const done = await vacuum.pass();
        vacuum.limits = {};
        const frozen = done.filter((task) => task.reason === 'wraparound').map((task) => task.table);
        // A catalog and a table of the service, neither changed since the pass after start.
        expect(frozen).toContain('pg_class');
        expect(frozen).toContain('workers');
        const after = await one<{ age: number }>(
          `SELECT age(datfrozenxid) FROM pg_database WHERE datname = current_database()`,
        );
        expect(after.age).toBeLessThan(1000);
        const oldest = await one<{ age: number }>(
          `SELECT max(age(relfrozenxid)) AS age FROM pg_class WHERE relkind IN ('r', 'm', 't')`,
        );
        expect(oldest.age).toBeLessThan(1000);
      } finally {
        vacuum.limits = {};
        await db.query(`DROP TABLE IF EXISTS xid_burner`);
      }
    });

    it('skips the pass after start on a database it created, and runs it when the database is opened again', async () => {
      // An empty data directory: this start creates the database (initdb), as a new user's first.
      // (Read from the database: the log capture and the metrics registry belong to this process's
      // first app.)
      const dataDir = mkdtempSync(join(tmpdir(), 'so-test-fresh-'));
      const fresh = {
        dataDir,
        databaseUrl: undefined,
        drop: () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })),
      };
      let app = await startTestApp({ db: fresh, env: { EMBEDDED_VACUUM_INTERVAL: '1s' } });
      try {
        const sql = (a: TestApp, text: string) => a.app.get(DataSource).query<{ relname: string }[]>(text);
        // The first pass ran: the catalogs the migrations changed are past the thresholds (analyzed)...
        await eventually(
          async () =>
            (
              await sql(
                app,
                `SELECT relname FROM pg_stat_sys_tables WHERE vacuum_count > 0 OR analyze_count > 0`,
              )
            ).length > 0,
          20_000,
        );
        // Past the end of that pass: a pass waits for the one in progress (and, ordinary, touches
        // only tables past the thresholds)...
        await app.app.get(EmbeddedVacuum).pass();
        // ...which left alone the service's tables that nothing changed (a pass after start
        // vacuums and analyzes every one).
        const untouched = await sql(
          app,
          `SELECT relname FROM pg_stat_user_tables WHERE vacuum_count = 0 AND analyze_count = 0`,
        );
        expect(untouched.map((r) => r.relname)).toContain('workers');

        // Opened again: PGlite's counters are gone, so every table is vacuumed and analyzed once.
        await app.close({ drop: false });
        app = await startTestApp({ db: fresh, env: { EMBEDDED_VACUUM_INTERVAL: '1s' } });
        await eventually(
          async () =>
            (
              await sql(
                app,
                `SELECT relname FROM pg_stat_user_tables WHERE vacuum_count = 0 OR analyze_count = 0`,
              )
            ).length === 0,
          20_000,
        );
      } finally {
        await app.close();
      }
    });
  } else {
    it('leaves PostgreSQL to its own autovacuum: no pass runs', async () => {
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(await counter('vacuum')).toBe(0);
      expect(await counter('analyze')).toBe(0);
      expect(t.logs.records().some((r) => r.msg?.startsWith('embedded database'))).toBe(false);
    });
  }
});
