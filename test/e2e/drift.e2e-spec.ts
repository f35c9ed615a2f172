import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import {
  connectedAgent,
  freePort,
  HTTP_SERVICE,
  httpGet,
  orchestrator,
  servicePid,
  FAST_AGENT_ENV,
} from '../support/stacks.js';

interface DriftItem {
  resource: string;
  kind: string;
  field: string | null;
  desired: string | null;
  actual: string | null;
  ignored: boolean;
  worker_id: string;
  detected_at: string;
  last_seen: string;
}
interface Drift {
  stack_id: string;
  status: string;
  checked_at: string | null;
  items: DriftItem[];
}

/** Two process services under `restart: never`: what stops stays stopped, and that is drift. */
const stackYaml = (port: number) => `
name: drifty
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
    ports: [${port}]
    restart: never
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
  side:
    command: ["${process.execPath}", "-e", "setInterval(() => {}, 1000)"]
    restart: never
    resources: { cpu: 0.1, memory: 32Mi }
`;

describe('drift with a real process-driver agent', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let stackId: string;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_AGENT_ENV });
    api = orchestrator(t);
    ({ agent } = await connectedAgent(t, 'drift-node'));
    port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml(port));
    expect(created.status, created.text).toBe(201);
    stackId = created.body.id as string;
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  const drift = async (): Promise<Drift> => {
    const res = await api.get(`/stacks/${stackId}/drift`);
    expect(res.status).toBe(200);
    return res.body as Drift;
  };
  const driftCounter = async (kind: string): Promise<number> => {
    const text = (await t.http.get('/metrics')).text;
    const m = new RegExp(`^stack_drift_detected_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  const pidOf = (service: string) => servicePid(agent.dataDir, stackId, service);

  it('is unknown before the stack is deployed, then in sync', async () => {
    expect(await drift()).toMatchObject({ stack_id: stackId, status: 'unknown', items: [] });
    const deploy = await api.post(`/stacks/${stackId}/deploy`);
    await api.jobUntil(deploy.body.id as string, ['succeeded']);
    await eventually(async () => (await drift()).status === 'in_sync');
    expect((await drift()).items).toEqual([]);
  });

  it('a restart: never service killed from outside is missing, counted once', async () => {
    process.kill(pidOf('web'), 'SIGKILL');
    let found: Drift | undefined;
    await eventually(async () => {
      found = await drift();
      return found.status === 'drifted';
    });
    expect(found!.items).toEqual([
      expect.objectContaining({
        resource: 'web',
        kind: 'missing',
        field: null,
        desired: 'running',
        ignored: false,
      }),
    ]);
    const first = found!.items[0];
    expect(await driftCounter('missing')).toBe(1);

    // Several reports and two scheduled checks later: the same item, seen again, counted once.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const later = await drift();
    expect(later.items).toHaveLength(1);
    expect(later.items[0].detected_at).toBe(first.detected_at);
    expect(Date.parse(later.items[0].last_seen)).toBeGreaterThan(Date.parse(first.last_seen));
    expect(await driftCounter('missing')).toBe(1);

    const record = t.logs.records().find((r) => r.msg === 'drift detected' && r.stack_id === stackId);
    expect(record).toMatchObject({ component: 'drift', resource: 'web', kind: 'missing' });
    const audit = await t.http
      .get('/api/v1/orchestrator/audit?action=drift.detected')
      .set('Authorization', await t.adminAuth());
    expect(JSON.stringify(audit.body)).toContain(stackId);
  });

  it('refuses bad ignore bodies and unknown resources, changing nothing', async () => {
    const post = async (body: unknown, type = 'application/json') =>
      t.http
        .post(`/api/v1/orchestrator/stacks/${stackId}/drift/ignore`)
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', type)
        .send(typeof body === 'string' ? body : JSON.stringify(body));
    for (const body of [
      {},
      { resources: 'web' },
      { resources: [] },
      { resources: [''] },
      { resources: [42] },
      { resources: ['web'], extra: 1 },
    ]) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    const unknown = await post({ resources: ['web', 'nope'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([
      expect.objectContaining({ path: 'resources.1', category: 'invalid_value' }),
    ]);
    expect((await post('{"resources": [', 'application/json')).status).toBe(400);
    expect((await post('resources: [web]', 'application/yaml')).status).toBe(415);
    const other = await t.http
      .post('/api/v1/orchestrator/stacks/00000000-0000-4000-8000-000000000000/drift/ignore')
      .set('Authorization', await t.adminAuth())
      .send({ resources: ['web'] });
    expect(other.status).toBe(404);
    const now = await drift();
    expect(now.items.every((i) => !i.ignored)).toBe(true);
  });

  it('ignore, then resolve: the ignored service is left alone, the rest is back and in sync', async () => {
    const sidePid = pidOf('side');
    process.kill(sidePid, 'SIGKILL');
    await eventually(async () => (await drift()).items.some((i) => i.resource === 'side'));
    expect(await driftCounter('missing')).toBe(2);

    const ignored = await api.post(`/stacks/${stackId}/drift/ignore`, { resources: ['side'] });
    expect(ignored.status).toBe(200);
    expect(ignored.body.status).toBe('drifted');
    expect((ignored.body.items as DriftItem[]).find((i) => i.resource === 'side')?.ignored).toBe(true);
    expect((ignored.body.items as DriftItem[]).find((i) => i.resource === 'web')?.ignored).toBe(false);

    const resolve = await api.post(`/stacks/${stackId}/drift/resolve`);
    expect(resolve.status).toBe(202);
    expect(resolve.body.job_id).toBe(resolve.body.job.id);
    const job = await api.jobUntil(resolve.body.job_id as string, ['succeeded', 'failed']);
    expect(job.status).toBe('succeeded');
    expect(job.results).toEqual([
      { name: 'side', action: 'kept', ok: true, error: null },
      { name: 'web', action: 'started', ok: true, error: null },
    ]);
    expect(await httpGet(port, '/health')).toEqual({ status: 200, text: 'ok\n' });

    await eventually(async () => (await drift()).status === 'in_sync');
    const after = await drift();
    // The ignored drift stays visible, marked, and out of the status; the side service stays down.
    expect(after.items).toEqual([
      expect.objectContaining({ resource: 'side', kind: 'missing', ignored: true }),
    ]);
    expect(existsSync(join(agent.dataDir, 'services', stackId, 'side.pid'))).toBe(false);
    expect(await driftCounter('missing')).toBe(2);

    // Only ignored drift: nothing to resolve.
    const again = await api.post(`/stacks/${stackId}/drift/resolve`);
    expect(again.status).toBe(409);
    expect(t.logs.records().some((r) => r.msg === 'drift resolve requested' && r.stack_id === stackId)).toBe(
      true,
    );

    // Taking the ignore back makes it drift again; resolving brings the service back.
    const unignored = await api.post(`/stacks/${stackId}/drift/unignore`, { resources: ['side'] });
    expect(unignored.body.status).toBe('drifted');
    const fix = await api.post(`/stacks/${stackId}/drift/resolve`);
    await api.jobUntil(fix.body.job_id as string, ['succeeded']);
    await eventually(async () => {
      const d = await drift();
      return d.status === 'in_sync' && d.items.length === 0;
    });
  });
});
