import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';
import { FAST_AGENT_ENV } from '../support/stacks.js';

// A real agent given both replicas' addresses (two service processes on one PostgreSQL database):
// when the replica holding its stream is killed with SIGKILL, it reconnects to the other and keeps
// heartbeating there. PostgreSQL whatever TEST_DB says; vitest.config.ts keeps this file out of the
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
