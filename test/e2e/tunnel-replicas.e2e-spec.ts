import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { relayTunnel, startRelay, type Relay } from '../support/relay.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';

// Two replicas of the built service on one PostgreSQL database and one relay: exactly one holds the
// `tunnel` lease and runs the SSH link, and the other takes over when the holder is killed.
// PostgreSQL whatever TEST_DB says (an embedded database belongs to one process); vitest.config.ts
// keeps this file out of the pglite pass, so it runs once per full test run.

interface Status {
  state: string;
  provider: string;
  public_url: string | null;
  agent_endpoint: string | null;
  started_at: string | null;
  last_error: string | null;
}

/** GET through the relay's public port; undefined when nothing answers there. */
async function through(url: string): Promise<number | undefined> {
  return fetch(url, { signal: AbortSignal.timeout(3000) }).then(
    async (res) => (await res.arrayBuffer(), res.status),
    () => undefined,
  );
}

describe('tunnel with two replicas on one PostgreSQL database', () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let relay: Relay;
  let publicUrl: string;
  let agentEndpoint: string;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;

  const api = async (svc: ServiceProcess, method: 'GET' | 'POST', path: string) => {
    const res = await fetch(`${svc.url}${path}`, {
      method,
      headers: { authorization: await svc.adminAuth() },
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: (await res.json()) as Status };
  };
  const status = async (svc: ServiceProcess) => (await api(svc, 'GET', '/api/v1/tunnel/status')).body;
  const tunnelUp = async (svc: ServiceProcess) => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    return Number(/^stack_tunnel_up (\d+)$/m.exec(text)?.[1]);
  };
  /** The pid in the live `tunnel` lease's holder (`host/pid/random`), if any replica holds it. */
  const holderPid = async (): Promise<number | undefined> => {
    const { rows } = await sql.query<{ holder: string }>(
      `SELECT holder FROM leases WHERE name = 'tunnel' AND expires_at >= clock_timestamp()`,
    );
    return rows[0] ? Number(rows[0].holder.split('/')[1]) : undefined;
  };
  const byPid = (pid: number | undefined) => replicas.find((r) => r.child.pid === pid);

  beforeAll(async () => {
    db = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: db.databaseUrl });
    await sql.connect();
    relay = await startRelay();
    const tunnel = await relayTunnel(relay);
    publicUrl = tunnel.publicUrl;
    agentEndpoint = tunnel.agentEndpoint;
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 2, tunnel.env));
  });
  afterAll(async () => {
    await stopReplicas?.();
    await sql?.end();
    await relay?.close();
    await db?.drop();
  });

  it('start through replica A: one replica holds the lease and the link, both answer the same status', async () => {
    const [a, b] = replicas;
    const started = await api(a, 'POST', '/api/v1/tunnel/start');
    expect(started.status).toBe(200);
    // Both replicas report the holder's link: running, the same URL, endpoint and start time.
    await eventually(async () => {
      const [sa, sb] = await Promise.all([status(a), status(b)]);
      return sa.state === 'running' && JSON.stringify(sa) === JSON.stringify(sb);
    }, 30_000);
    expect(await status(b)).toMatchObject({ public_url: publicUrl, agent_endpoint: agentEndpoint });

    const holder = byPid(await holderPid());
    expect(holder).toBeDefined();
    const other = replicas.find((r) => r !== holder)!;
    expect(await tunnelUp(holder!)).toBe(1);
    expect(await tunnelUp(other)).toBe(0);
    const { rows } = await sql.query<{ holder: string }>(`SELECT holder FROM tunnel_state`);
    expect(Number(rows[0].holder.split('/')[1])).toBe(holder!.child.pid);
    expect(await through(`${publicUrl}/health/live`)).toBe(200);
    // The other replica keeps trying the lease every second and keeps being refused.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(byPid(await holderPid())).toBe(holder);
    expect(await tunnelUp(other)).toBe(0);
  });

  it('SIGKILL of the holder: the other replica takes the lease over and the relay answers again', async () => {
    const victim = byPid(await holderPid())!;
    const survivor = replicas.find((r) => r !== victim)!;
    await victim.stop('SIGKILL');
    // The lease runs out (10 s), the survivor takes it and connects; the relay has dropped the dead
    // replica's session (its TCP connection was closed by the kernel), so the ports can be bound.
    await eventually(async () => (await holderPid()) === survivor.child.pid, 30_000, 250);
    await eventually(
      async () =>
        (await status(survivor)).state === 'running' && (await through(`${publicUrl}/health/live`)) === 200,
      45_000,
      250,
    );
    expect(await status(survivor)).toMatchObject({
      state: 'running',
      public_url: publicUrl,
      agent_endpoint: agentEndpoint,
      last_error: null,
    });
    expect(await tunnelUp(survivor)).toBe(1);
    const messages = survivor.records().map((r) => r.msg);
    expect(messages).toContain('this replica holds the tunnel');
    expect(messages).toContain('tunnel running');
    // The identity through the relay is this instance's, as answered by the survivor directly.
    const identity = await (await fetch(`${publicUrl}/.well-known/stack-orchestrator`)).json();
    expect(identity).toEqual(await (await fetch(`${survivor.url}/.well-known/stack-orchestrator`)).json());
  });

  it('stop through the survivor closes the link and gives the lease up', async () => {
    const survivor = byPid(await holderPid())!;
    const stopped = await api(survivor, 'POST', '/api/v1/tunnel/stop');
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'stopped', public_url: null, agent_endpoint: null });
    expect(await holderPid()).toBeUndefined();
    expect(await tunnelUp(survivor)).toBe(0);
    expect(await through(`${publicUrl}/health/live`)).toBeUndefined();
    // Stopped is stored: no replica takes the lease again.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await holderPid()).toBeUndefined();
  });
});
