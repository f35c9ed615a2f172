import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { connectAgent, enrollAgent, sleep } from '../support/grpc-agent.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';
import { FAST_AGENT_ENV } from '../support/stacks.js';

// A real agent given both replicas' addresses (two service processes on one PostgreSQL database):
// when the replica holding its stream is killed with SIGKILL, it reconnects to the other and keeps
// heartbeating there; and an agent moving between them is not judged silent while its new replica
// waits on the database to record the move. PostgreSQL whatever TEST_DB says; vitest.config.ts keeps this file out of the
// pglite pass, so it runs once per full test run.

interface WorkerView {
  id: string;
  status: string;
  connected: boolean;
  last_heartbeat: string | null;
}

describe('an agent with two replicas, one killed', () => {
  let db: TestDatabase;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;
  let agent: AgentProcess | undefined;
  /** Each replica's agent endpoint, as its `info` names it. */
  const endpoints = new Map<ServiceProcess, string>();

  const api = async (svc: ServiceProcess, method: 'GET' | 'POST', path: string, body?: object) => {
    const res = await fetch(`${svc.url}/api/v1/orchestrator${path}`, {
      method,
      headers: { authorization: await svc.adminAuth(), 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const worker = async (svc: ServiceProcess, id: string) =>
    (await api(svc, 'GET', `/workers/${id}`)).body as unknown as WorkerView;
  const connections = () => (agent?.records() ?? []).filter((r) => r.msg === 'connected');

  beforeAll(async () => {
    db = await createPostgresDatabase();
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 2, FAST_AGENT_ENV));
    for (const svc of replicas) {
      const info = await api(svc, 'GET', '/info');
      expect(info.status).toBe(200);
      endpoints.set(svc, info.body.agent_endpoint as string);
    }
  });
  afterAll(async () => {
    await agent?.stop();
    await stopReplicas?.();
    await db?.drop();
  });

  it('an agent whose session claim waits on the database is not judged silent meanwhile', async () => {
    // The silence timeout is 3 heartbeat intervals (FAST_AGENT_ENV: 300 ms). The agent moves from
    // replica a to replica b while a test transaction holds its session row, so b's claim of the
    // stream (an upsert of that row) waits three timeouts before b can welcome the agent, which
    // cannot heartbeat before its welcome. Neither replica may mark the worker unreachable for it:
    // a's stream is gone (a's release of the row waits too, so a still holds it), and b's clock
    // starts when it welcomes the agent.
    const intervalMs = 300;
    const [a, b] = replicas;
    const token = await api(a, 'POST', '/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    const identity = await enrollAgent(a.url, token.body.token as string, 'slow-claim');
    const first = await connectAgent(endpoints.get(a)!, identity, intervalMs);
    await eventually(async () => (await worker(a, identity.id)).status === 'healthy', 20_000);

    const sql = new pg.Client({ connectionString: db.databaseUrl });
    await sql.connect();
    const watcher = new pg.Client({ connectionString: db.databaseUrl });
    await watcher.connect();
    const dbStatus = async () =>
      (await watcher.query<{ status: string }>(`SELECT status FROM workers WHERE id = $1`, [identity.id]))
        .rows[0].status;
    // An approved worker is unreachable until its first heartbeat is written: from then on, watched.
    await eventually(async () => (await dbStatus()) === 'healthy', 20_000);
    const states: string[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        states.push(await dbStatus());
        await sleep(50);
      }
    })();
    let welcomed = false;
    const closers: (() => void)[] = [];
    try {
      await sql.query('BEGIN');
      const held = await sql.query(`SELECT 1 FROM agent_sessions WHERE worker_id = $1 FOR UPDATE`, [
        identity.id,
      ]);
      expect(held.rowCount).toBe(1);
      first.close();
      const second = connectAgent(endpoints.get(b)!, identity, intervalMs).then((agent) => {
        welcomed = true;
        closers.push(() => agent.close());
        return agent;
      });
      await sleep(9 * intervalMs);
      // b has the hello and is still waiting to record the stream: nothing welcomed the agent yet.
      expect(welcomed).toBe(false);
      await sql.query('COMMIT');
      await second;
      const since = Date.now();
      await eventually(async () => {
        const w = await worker(b, identity.id);
        return w.connected && w.last_heartbeat !== null && Date.parse(w.last_heartbeat) > since;
      }, 20_000);
      watching = false;
      await watch;
      const marked = replicas
        .flatMap((r) => r.records())
        .filter((r) => r.worker_id === identity.id && r.to === 'unreachable');
      expect(marked).toEqual([]);
      expect(states.length).toBeGreaterThan(20);
      expect(states.filter((s) => s === 'unreachable')).toEqual([]);
    } finally {
      for (const close of closers) close();
      await sql.query('ROLLBACK').catch(() => undefined);
      await sql.end();
      watching = false;
      await watch;
      await watcher.end();
    }
  });

  it('reconnects to the surviving replica, which sees its heartbeats', async () => {
    const [a, b] = replicas;
    const token = await api(a, 'POST', '/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    agent = AgentProcess.start({
      server: `${a.url},${b.url}`,
      token: token.body.token as string,
      name: 'two-replicas',
      args: ['--agent-endpoint', `${endpoints.get(a)},${endpoints.get(b)}`],
    });
    await eventually(() => connections().length > 0, 30_000);
    const first = connections()[0];
    const workerId = first.worker_id as string;
    const holder = replicas.find((r) => endpoints.get(r) === first.endpoint);
    const survivor = replicas.find((r) => r !== holder);
    expect(holder).toBeDefined();
    expect(survivor).toBeDefined();
    await eventually(async () => {
      const w = await worker(holder!, workerId);
      return w.connected && w.status === 'healthy';
    }, 20_000);

    const killedAt = Date.now();
    await holder!.stop('SIGKILL');
    await eventually(() => connections().length > 1, 20_000);
    const second = connections()[1];
    expect(second.worker_id).toBe(workerId);
    expect(second.endpoint).toBe(endpoints.get(survivor!));

    // What the surviving replica itself knows: the stream is its own now, and heartbeats arrive.
    let seen = '';
    await eventually(async () => {
      const w = await worker(survivor!, workerId);
      if (!w.connected || w.status !== 'healthy' || !w.last_heartbeat) return false;
      if (Date.parse(w.last_heartbeat) <= killedAt) return false;
      seen = w.last_heartbeat;
      return true;
    }, 20_000);
    await eventually(async () => {
      const w = await worker(survivor!, workerId);
      return w.last_heartbeat !== null && Date.parse(w.last_heartbeat) > Date.parse(seen);
    }, 20_000);
    // The agent made one reconnect: the killed replica is not tried again while the other holds it.
    expect(connections()).toHaveLength(2);
  });
});
