import pg from 'pg';
import { DataSource, type AfterQueryEvent } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { connectAgent, enrollAgent, preApprovedToken, type AgentIdentity } from '../support/grpc-agent.js';

// Agents that come or go together are served together (issue 18, item 3): when a fleet reconnects
// at once, each hello's reads and writes (its worker's row, its session claim, its jobs'
// reconciliation) join the others made meanwhile in one statement, instead of one statement per
// agent; so do the release of each stream's session and the reads at its end when a fleet leaves.
// Here they are made to wait together by a lock on a table, held by another session until every
// agent has arrived or left: so this file needs a real PostgreSQL server (the embedded database is
// a single session; every other agent test runs these statements on it).

const AGENTS = 40;

/** A read of agents' unfinished jobs: at a reconnect (their reconciliation) and at a stream's end. */
const isActiveJobsRead = (sql: string) =>
  /FROM "jobs"/.test(sql) && /'dispatched', 'running', 'cancelling'/.test(sql);

describe('agents connecting or leaving together are served in gathered statements', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpoint: string;
  const agents: AgentIdentity[] = [];
  const connections: { close(): void }[] = [];
  /** Every statement the app ran since its start. */
  const statements: string[] = [];
  const workers = async () => {
    const res = await t.http
      .get('/api/v1/orchestrator/workers?limit=100')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    return res.body.workers as { connected: boolean; status: string }[];
  };
  const records = (msg: string) => t.logs.records().filter((r) => r.msg === msg);

  beforeAll(async () => {
    db = await createPostgresDatabase();
    // Debug records name each agent message received: the test knows when every hello is in.
    t = await startTestApp({ db, env: { LOG_LEVEL: 'debug' } });
    const token = await preApprovedToken(t);
    for (let i = 0; i < AGENTS; i += 10) {
      const batch = Array.from({ length: Math.min(10, AGENTS - i) }, (_, j) =>
        enrollAgent(t.url, token, `gathered-${i + j}`),
      );
      agents.push(...(await Promise.all(batch)));
    }
    t.app.get(DataSource).subscribers.push({
      afterQuery: (event: AfterQueryEvent) => void statements.push(event.query),
    });
    endpoint = (await t.http.get('/api/v1/orchestrator/info').set('Authorization', await t.adminAuth())).body
      .agent_endpoint as string;
  });
  afterAll(async () => {
    for (const c of connections) c.close();
    await t?.close({ drop: false });
    await db?.drop();
  });

  it(`${AGENTS} hellos waiting together: a few statements read their workers, claim their sessions and reconcile their jobs`, async () => {
    // A first connection of each: the gateway then knows their certificates (it checks one
    // against `workers` too, which the lock below would hold up before the hello). Their ends
    // read the agents' unfinished jobs as well: the test goes on once those reads are over.
    const first = await Promise.all(agents.map((agent) => connectAgent(endpoint, agent, 60_000)));
    for (const c of first) c.close();
    await eventually(async () => (await workers()).every((w) => !w.connected), 30_000);
    let seen = -1;
    await eventually(
      () => {
        const now = statements.filter(isActiveJobsRead).length;
        const still = now === seen;
        seen = now;
        return still;
      },
      30_000,
      1000,
    );
    const from = statements.length;
    const hellosIn = () => records('agent message received').filter((r) => r.kind === 'hello').length;
    const before = hellosIn();
    const locker = new pg.Client({ connectionString: db.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE workers IN ACCESS EXCLUSIVE MODE');
      const welcomed = agents.map((agent) => connectAgent(endpoint, agent, 60_000));
      await eventually(() => hellosIn() - before === AGENTS, 30_000);
      await locker.query('ROLLBACK');
      connections.push(...(await Promise.all(welcomed)));
      const { rows } = await locker.query<{ n: string }>('SELECT count(*) AS n FROM agent_sessions');
      expect(Number(rows[0].n)).toBe(AGENTS);
    } finally {
      await locker.end();
    }
    const during = statements.slice(from);
    const workerReads = during.filter((q) => /^SELECT\b/i.test(q) && /FROM "workers"/.test(q));
    const claims = during.filter((q) => /INSERT INTO agent_sessions/.test(q));
    const reconciliations = during.filter(isActiveJobsRead);
    // One statement per agent would be 40 of each.
    for (const gathered of [workerReads, claims, reconciliations]) {
      expect(gathered.length).toBeGreaterThan(0);
      expect(gathered.length).toBeLessThanOrEqual(8);
    }
    // Every agent is known as connected, and heartbeats through its own stream.
    await eventually(async () => {
      const listed = await workers();
      return listed.length === AGENTS && listed.every((w) => w.connected && w.status === 'healthy');
    }, 30_000);
  });

  it(`${AGENTS} agents leaving together: a few statements release their sessions and read their jobs`, async () => {
    expect(connections).toHaveLength(AGENTS);
    const from = statements.length;
    const before = records('agent disconnected').length;
    const locker = new pg.Client({ connectionString: db.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE agent_sessions IN ACCESS EXCLUSIVE MODE');
      for (const c of connections.splice(0)) c.close();
      await eventually(() => records('agent disconnected').length - before === AGENTS, 30_000);
      await locker.query('ROLLBACK');
      await eventually(async () => {
        const { rows } = await locker.query<{ n: string }>('SELECT count(*) AS n FROM agent_sessions');
        return Number(rows[0].n) === 0;
      }, 30_000);
    } finally {
      await locker.end();
    }
    await eventually(async () => (await workers()).every((w) => !w.connected), 30_000);
    // Past the reads that follow the releases (each ended stream's jobs, unless held elsewhere).
    await eventually(() => statements.slice(from).filter(isActiveJobsRead).length > 0, 30_000);
    const during = statements.slice(from);
    const releases = during.filter((q) =>
      /^DELETE FROM agent_sessions WHERE replica = \$1 AND worker_id = ANY/.test(q),
    );
    const holders = during.filter((q) =>
      /^WITH alive AS .*SELECT worker_id, replica FROM agent_sessions JOIN alive/s.test(q),
    );
    const jobReads = during.filter(isActiveJobsRead);
    // One statement per agent would be 40 of each.
    for (const gathered of [releases, holders, jobReads]) {
      expect(gathered.length).toBeGreaterThan(0);
      expect(gathered.length).toBeLessThanOrEqual(8);
    }
  });
});
