import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsFromRecord, labelsKey } from '../../src/server/metric-store/labels.js';
import { SERIES_INSERT_LOCK_KEY } from '../../src/server/metric-store/store/series-index.js';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';

// The metric store with two replicas of the built service on one PostgreSQL database: a write
// through one is read through the other at once, one replica compacts (the `metric-store` lease),
// and when it is killed the other takes compaction over. PostgreSQL whatever TEST_DB says;
// vitest.config.ts keeps this file out of the pglite pass, so it runs once per full test run.
describe('metric store with two replicas on one PostgreSQL database', () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    db = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: db.databaseUrl });
    await sql.connect();
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 2, {
      METRICS_SCRAPE_INTERVAL: '1s',
    }));
  });
  afterAll(async () => {
    await stopReplicas?.();
    await sql.end();
    await db.drop();
  });

  const query = async (svc: ServiceProcess, q: string) => {
    const res = await fetch(`${svc.url}/prometheus/api/v1/query?query=${encodeURIComponent(q)}`, {
      headers: { authorization: await svc.adminAuth() },
    });
    expect(res.status).toBe(200);
    return (
      (await res.json()) as {
        data: { result: { metric: Record<string, string>; value: [number, string] }[] };
      }
    ).data.result;
  };
  const holderPid = async (): Promise<number | undefined> => {
    const { rows } = await sql.query<{ holder: string }>(
      `SELECT holder FROM leases WHERE name = 'metric-store' AND expires_at >= clock_timestamp()`,
    );
    return rows[0] ? Number(rows[0].holder.split('/')[1]) : undefined;
  };

  it('a write through one replica is read through the other at once', async () => {
    const [a, b] = replicas;
    const res = await fetch(`${a.url}/prometheus/api/v1/import/prometheus`, {
      method: 'POST',
      headers: { authorization: await a.adminAuth(), 'content-type': 'text/plain' },
      body: 'replicated_metric{via="a"} 42\n',
    });
    expect(res.status).toBe(204);
    const seen = await query(b, 'replicated_metric');
    expect(seen.map((s) => s.value[1])).toEqual(['42']);
    // Each replica stores its own /metrics: both instances are visible from either.
    await eventually(async () => (await query(a, 'up{job="stack-orchestrator"}')).length === 2, 20_000);
  });

  it('a series another writer drew an earlier id for is seen once it commits, even after a later one', async () => {
    const [a] = replicas;
    const auth = await a.adminAuth();
    const write = (body: string) =>
      fetch(`${a.url}/prometheus/api/v1/import/prometheus`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'text/plain' },
        body,
      });
    // Another writer, as replica b's code does it: the series lock, then an id drawn, not committed.
    const other = new pg.Client({ connectionString: db.databaseUrl });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1)', [SERIES_INSERT_LOCK_KEY]);
      await other.query(
        `INSERT INTO metric_series (owner, key, metric_name, labels) VALUES ('default', $1, 'drawn_first', $2)`,
        [
          labelsKey(labelsFromRecord({ __name__: 'drawn_first' })),
          JSON.stringify([['__name__', 'drawn_first']]),
        ],
      );
      // Replica a creates a series of its own meanwhile (a later id), given time to overtake.
      const later = write('drawn_later 1\n');
      await Promise.race([later, new Promise((r) => setTimeout(r, 1000))]);
      await other.query('COMMIT');
      expect((await later).status).toBe(204);
    } finally {
      await other.end();
    }
    // Replica a knows the earlier id too: a write to that series is stored and read back.
    expect((await write('drawn_first 7\n')).status).toBe(204);
    expect((await query(a, 'drawn_first')).map((s) => s.value[1])).toEqual(['7']);
    expect((await query(a, 'drawn_later')).map((s) => s.value[1])).toEqual(['1']);
  });

  it('one replica compacts; when it is killed, the other takes over within the lease time', async () => {
    await eventually(async () => (await holderPid()) !== undefined, 15_000);
    const pid = await holderPid();
    const holder = replicas.find((r) => r.child.pid === pid);
    expect(holder).toBeDefined();
    const other = replicas.find((r) => r !== holder) as ServiceProcess;
    await holder?.stop('SIGKILL');
    // A sample four hours old lies in a closed window: the survivor folds it once it holds the lease.
    const at = Date.now() - 4 * 3_600_000;
    const res = await fetch(`${other.url}/prometheus/api/v1/import/prometheus`, {
      method: 'POST',
      headers: { authorization: await other.adminAuth(), 'content-type': 'text/plain' },
      body: `folded_late 7 ${at}\n`,
    });
    expect(res.status).toBe(204);
    await eventually(async () => (await holderPid()) === other.child.pid, 20_000);
    await eventually(async () => {
      const { rows } = await sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM metric_batches WHERE min_t <= $1 AND max_t >= $1`,
        [at],
      );
      return rows[0].n === 0;
    }, 30_000);
    const { rows } = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM metric_chunks WHERE min_t <= $1 AND max_t >= $1`,
      [at],
    );
    expect(rows[0].n).toBe(1);
    const res2 = await fetch(`${other.url}/prometheus/api/v1/query?query=folded_late&time=${at / 1000}`, {
      headers: { authorization: await other.adminAuth() },
    });
    const body = (await res2.json()) as { data: { result: { value: [number, string] }[] } };
    expect(body.data.result.map((s) => s.value[1])).toEqual(['7']);
    expect((await query(other, 'replicated_metric')).map((s) => s.value[1])).toEqual(['42']);
  });
});
