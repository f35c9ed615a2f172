import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_BACKLOG_MARK, WORKER_SWEEP_LEASE } from '../../src/server/workers/workers.service.js';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { admissionBacklog, connectAgent, enrollAgent, sleep, STORM } from '../support/grpc-agent.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';

// A reconnect storm on the replica that does not hold the `worker-sweep` lease: two replicas of the
// built service on one PostgreSQL database; agents queue at one replica's agent port while the
// other replica's sweep would judge a silent worker. The backlog marker carries it across, so the
// worker is marked only once the backlog has cleared for the margin. PostgreSQL whatever TEST_DB
// says (vitest.config.ts keeps this file out of the pglite pass).

const { intervalMs: INTERVAL_MS, timeoutMs: TIMEOUT_MS, marginMs: MARGIN_MS } = STORM;

describe('a backlog on the replica that does not sweep', () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    db = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: db.databaseUrl });
    await sql.connect();
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 2, STORM.env));
  });
  afterAll(async () => {
    for (const close of closers) close();
    await stopReplicas?.();
    await sql?.end();
    await db.drop();
  });

  const holderOf = async (name: string) =>
    (
      await sql.query<{ holder: string }>(
        `SELECT holder FROM leases WHERE name = $1 AND expires_at > clock_timestamp()`,
        [name],
      )
    ).rows[0]?.holder;
  /** The replica a `leases.holder` names (`host/pid/random`). */
  const replicaOf = (holder: string) => replicas.find((r) => r.child.pid === Number(holder.split('/')[1]));
  const status = async (id: string) =>
    (await sql.query<{ status: string }>(`SELECT status FROM workers WHERE id = $1`, [id])).rows[0]?.status;
  const agentEndpoint = async (svc: ServiceProcess) => {
    const res = await fetch(`${svc.url}/api/v1/orchestrator/info`, {
      headers: { authorization: await svc.adminAuth() },
    });
    return ((await res.json()) as { agent_endpoint: string }).agent_endpoint;
  };

  it('holds the sweeping replica off, and it marks a silent worker once the backlog has cleared for the margin', async () => {
    let sweeper: ServiceProcess | undefined;
    await eventually(async () => {
      const holder = await holderOf(WORKER_SWEEP_LEASE);
      sweeper = holder ? replicaOf(holder) : undefined;
      return sweeper !== undefined;
    }, 15_000);
    const sweeping = sweeper!;
    const queued = replicas.find((r) => r !== sweeping)!;
    const token = await fetch(`${sweeping.url}/api/v1/orchestrator/join-tokens`, {
      method: 'POST',
      headers: { authorization: await sweeping.adminAuth(), 'content-type': 'application/json' },
      body: JSON.stringify({ pre_approved: true }),
    });
    expect(token.status).toBe(201);
    const silent = await enrollAgent(
      sweeping.url,
      ((await token.json()) as { token: string }).token,
      'node-silent',
    );
    const agent = await connectAgent(await agentEndpoint(sweeping), silent, INTERVAL_MS);
    closers.push(() => agent.close());
    await eventually(async () => (await status(silent.id)) === 'healthy', 15_000);
    // Past the sweeping replica's restart grace (it held the lease before the agent connected).
    await sleep(TIMEOUT_MS + INTERVAL_MS);

    const backlog = admissionBacklog(Number((await agentEndpoint(queued)).split(':').at(-1)));
    closers.push(() => backlog.stop());
    // The marker is the queued replica's: the sweeping one has no backlog of its own.
    await eventually(async () => {
      const holder = await holderOf(AGENT_BACKLOG_MARK);
      return holder !== undefined && replicaOf(holder) === queued;
    }, 10_000);
    agent.close();
    let goneAt: number | undefined;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        if ((await status(silent.id)) === 'unreachable') goneAt ??= Date.now();
        await sleep(100);
      }
    })();
    // Twice the timeout of silence, agents queued on the other replica throughout: nothing marked.
    await sleep(2 * TIMEOUT_MS);
    expect(goneAt).toBeUndefined();
    expect(sweeping.stdout.join('\n')).toContain('the unreachable sweep holds off');
    backlog.stop();
    const cleared = Date.now();
    await eventually(() => goneAt !== undefined, MARGIN_MS + 20_000, 200);
    watching = false;
    await watch;
    expect(goneAt! - cleared).toBeGreaterThanOrEqual(MARGIN_MS - STORM.samplingMs);
  }, 150_000);
});
