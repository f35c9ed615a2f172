import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { connectAgent, enrollAgent } from '../support/grpc-agent.js';

// A service restart under connected agents (issue 18): the service is down for longer than the
// unreachable timeout (3 heartbeat intervals), and a worker that reconnects within three intervals
// of the service being back is never marked unreachable; one that stays silent still is, three
// intervals after the restart and not before.

const INTERVAL_MS = 1000;
const TIMEOUT_MS = 3 * INTERVAL_MS;
const ENV = {
  HEARTBEAT_INTERVAL: `${INTERVAL_MS}ms`,
  WORKER_DEGRADED_PERCENT: '100',
  WORKER_UNHEALTHY_PERCENT: '100',
};
interface WorkerBody {
  id: string;
  status: string;
  connected: boolean;
  last_heartbeat: string | null;
}

describe('a service restart under connected agents', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  const agents: { close(): void }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const a of agents) a.close();
    await t?.close({ drop: false });
    await db.drop();
  });

  async function api(app: TestApp, method: 'get' | 'post', path: string, body?: object) {
    const req = app.http[method](`/api/v1/orchestrator${path}`).set('Authorization', await app.adminAuth());
    return body ? req.send(body) : req;
  }

  async function worker(app: TestApp, id: string): Promise<WorkerBody> {
    const res = await api(app, 'get', `/workers/${id}`);
    expect(res.status).toBe(200);
    return res.body as WorkerBody;
  }

  const endpoint = async (app: TestApp) => (await api(app, 'get', '/info')).body.agent_endpoint as string;

  it('gives every worker three intervals from the restart to report, and marks a silent one after them', async () => {
    t = await startTestApp({ db, env: ENV });
    const token = (await api(t, 'post', '/join-tokens', { pre_approved: true })).body.token as string;
    const back = await enrollAgent(t.url, token, 'node-back');
    const gone = await enrollAgent(t.url, token, 'node-gone');
    const first = await endpoint(t);
    for (const identity of [back, gone]) agents.push(await connectAgent(first, identity, INTERVAL_MS));
    const app = t;
    await eventually(async () => {
      const ws = await Promise.all([worker(app, back.id), worker(app, gone.id)]);
      return ws.every((w) => w.status === 'healthy' && w.connected);
    }, 15_000);

    // Down for longer than the timeout: every last heartbeat is older than 3 intervals on return.
    await t.close({ drop: false });
    for (const a of agents.splice(0)) a.close();
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 500));
    const restarting = Date.now();
    t = await startTestApp({ db, env: ENV });
    const restarted = t;

    // One worker reports a storm's while after the service is back; the other never does. Both
    // are watched every 100 ms from the restart on.
    const seen = new Set<string>();
    let goneAt: number | undefined;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const [b, g] = await Promise.all([worker(restarted, back.id), worker(restarted, gone.id)]);
        seen.add(b.status);
        if (g.status === 'unreachable') goneAt ??= Date.now();
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, INTERVAL_MS));
    agents.push(await connectAgent(await endpoint(restarted), back, INTERVAL_MS));
    await eventually(async () => {
      const w = await worker(restarted, back.id);
      return w.status === 'healthy' && w.connected && Date.parse(w.last_heartbeat!) > restarting;
    }, 10_000);
    await eventually(() => goneAt !== undefined, 15_000);
    // A few more sweeps: the reporting one stays healthy throughout.
    await new Promise((r) => setTimeout(r, 2 * INTERVAL_MS));
    watching = false;
    await watch;
    expect([...seen]).toEqual(['healthy']);
    // The silent one: not before three intervals from the restart.
    expect(goneAt! - restarting).toBeGreaterThanOrEqual(TIMEOUT_MS);
  });
});
