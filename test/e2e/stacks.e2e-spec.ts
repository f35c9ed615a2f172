import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StacksService } from '../../src/server/stacks/stacks.service.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import {
  freePort,
  HTTP_SERVICE,
  httpGet,
  orchestrator,
  servicePid,
  type JobBody,
} from '../support/stacks.js';

/** A stack of one process-driver service: the fixture HTTP service on `port`. */
function stackYaml(
  name: string,
  port: number,
  options: { version?: string; failHealth?: boolean; zone?: string; secretRef?: string } = {},
): string {
  return `
name: ${name}
stackkit: basement-kit
variant: default
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
      VERSION: "${options.version ?? '1'}"
      FAIL_HEALTH: "${options.failHealth ? '1' : '0'}"
${options.secretRef ? `      SECRET_VALUE: "\${${options.secretRef}}"\n` : ''}    ports: [${port}]
    restart: on-failure
    resources:
      cpu: 0.1
      memory: 64Mi
    health_check:
      path: /health
      port: ${port}
      interval: 1s
${options.zone ? `    placement:\n      labels:\n        zone: ${options.zone}\n` : ''}`;
}

interface AuditBody {
  action: string;
  outcome: string;
  owner: string | null;
  actor: string | null;
  target: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
}

describe('stacks deployed by jobs to a real process-driver agent', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let workerId: string;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '300ms',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
    api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true, labels: { zone: 'lab' } });
    expect(token.status).toBe(201);
    agent = AgentProcess.start({
      server: t.url,
      token: token.body.token as string,
      name: 'stack-node',
      env: { STACK_TEST_SECRET: 's3cr3t-from-the-node' },
    });
    await eventually(async () => {
      const res = await api.get('/workers');
      const w = (res.body.workers as { id: string; name: string; connected: boolean; status: string }[]).find(
        (x) => x.name === 'stack-node',
      );
      workerId = w?.id ?? '';
      return w !== undefined && w.connected && (w.status === 'healthy' || w.status === 'degraded');
    }, 20_000);
  });

  afterAll(async () => {
    if (process.env.DEBUG_LOGS)
      for (const r of t.logs.records())
        if (r.level === 'ERROR' || r.level === 'WARN') console.log(JSON.stringify(r).slice(0, 1500));
    await agent?.stop();
    await t?.close();
  });

  async function createStack(source: string): Promise<string> {
    const res = await api.yaml('post', '/stacks', source);
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  }

  /**
   * A stack's first deploy is queued for placement; a placed stack's job goes to its live worker
   * from the request itself (dispatched, with its first attempt).
   */
  async function deploy(stackId: string, status: 'queued' | 'dispatched' = 'queued'): Promise<JobBody> {
    const res = await api.post(`/stacks/${stackId}/deploy`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({
      type: 'provision',
      stack_id: stackId,
      status,
      attempts: status === 'queued' ? 0 : 1,
    });
    return res.body as JobBody;
  }

  it('deploys a stack whose service then answers HTTP, reports its health, and destroys it', async () => {
    const port = await freePort();
    const stackId = await createStack(stackYaml('web-one', port, { secretRef: 'STACK_TEST_SECRET' }));
    const created = await api.get(`/stacks/${stackId}`);
    expect(created.body).toMatchObject({
      name: 'web-one',
      status: 'draft',
      revision: 1,
      stackkit: 'basement-kit',
      services: ['web'],
    });

    const queued = await deploy(stackId);
    const job = await api.jobUntil(queued.id, ['succeeded', 'failed']);
    expect(job, JSON.stringify(job)).toMatchObject({
      status: 'succeeded',
      worker_id: workerId,
      progress: 100,
    });
    expect(job.results).toEqual([{ name: 'web', action: 'created', ok: true, error: null }]);

    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '1' });
    // The `${NAME}` reference was resolved on the node, from the agent's own environment.
    expect(await httpGet(port, '/secret')).toEqual({ status: 200, text: 's3cr3t-from-the-node' });

    const stack = await api.get(`/stacks/${stackId}`);
    expect(stack.body).toMatchObject({ status: 'deployed', deployed_revision: 1, worker_id: workerId });

    const logs = await api.get(`/jobs/${job.id}/logs`);
    expect(logs.status).toBe(200);
    const lines = (logs.body.lines as { line: string }[]).map((l) => l.line);
    expect(lines.some((l) => l.includes('web: starting'))).toBe(true);
    expect(lines.some((l) => l.startsWith('web: healthy (HTTP 200'))).toBe(true);

    let health: Record<string, unknown> = {};
    await eventually(async () => {
      const res = await api.get(`/stacks/${stackId}/health`);
      expect(res.status).toBe(200);
      health = res.body as Record<string, unknown>;
      return health.overall === 'healthy';
    });
    expect(health).toMatchObject({ stack_id: stackId, overall: 'healthy' });
    const [service] = health.services as Record<string, unknown>[];
    expect(service).toMatchObject({
      name: 'web',
      status: 'healthy',
      health_check: { url: `http://127.0.0.1:${port}/health`, status_code: 200 },
    });
    expect(service.uptime).toMatch(/^\d+h\d+m\d+s$/);
    expect(Number.isInteger((service.health_check as { latency_ms: number }).latency_ms)).toBe(true);

    // The same revision again changes nothing on the node.
    const again = await api.jobUntil((await deploy(stackId, 'dispatched')).id, ['succeeded', 'failed']);
    expect(again.results).toEqual([{ name: 'web', action: 'unchanged', ok: true, error: null }]);

    // The job's log records (part 2 of the document).
    const record = t.logs.records().find((r) => r.msg === 'job succeeded' && r.job_id === job.id);
    expect(record).toMatchObject({ component: 'jobs', job_type: 'provision', worker_id: workerId });
    expect(Number.isInteger(record?.duration_ms)).toBe(true);

    const metrics = await t.http.get('/metrics');
    expect(metrics.text).toMatch(/stack_jobs_total\{type="provision",status="succeeded"\} [2-9]/);
    expect(metrics.text).toMatch(
      /stack_jobs_duration_seconds_count\{type="provision",status="succeeded"\} [2-9]/,
    );
    expect(metrics.text).toMatch(/^stack_stacks_total 1$/m);

    // Destroy removes what was deployed, then the stack.
    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    expect(destroy.body).toMatchObject({ type: 'destroy', stack_id: stackId });
    const destroyed = await api.jobUntil(destroy.body.id as string, ['succeeded', 'failed']);
    expect(destroyed.status).toBe('succeeded');
    expect(destroyed.results).toEqual([{ name: 'web', action: 'removed', ok: true, error: null }]);
    expect(await httpGet(port, '/version')).toBe('ECONNREFUSED');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
    expect((await t.http.get('/metrics')).text).toMatch(/^stack_stacks_total 0$/m);
  });

  it("a stack cannot read the agent's join token through a ${NAME} reference", async () => {
    // The agent was given its join token in STACK_AGENT_TOKEN; stacks see the rest of its environment.
    const stackId = await createStack(
      stackYaml('token-thief', await freePort(), { secretRef: 'STACK_AGENT_TOKEN' }),
    );
    const job = await api.jobUntil((await deploy(stackId)).id, ['succeeded', 'failed']);
    expect(job.status).toBe('failed');
    expect(job.error).toContain('environment variable STACK_AGENT_TOKEN is not set on the agent');
    expect((await api.delete(`/stacks/${stackId}`)).status).toBe(202);
  });

  it('services act for the caller they are handed, outside any request (as a timer or a tool would)', async () => {
    const stacks = t.app.get(StacksService);
    const other = { clientId: 'tool', owner: 'tool-tenant', scopes: ['orchestrator:write'], claims: {} };
    const created = await stacks.create(other, {
      source: stackYaml('from-a-tool', await freePort()),
      options: {},
    });
    expect(created.name).toBe('from-a-tool');
    // Owned by the caller given, so invisible to the operator's owner and listed for its owner only.
    expect((await api.get(`/stacks/${created.id}`)).status).toBe(404);
    expect((await stacks.list(other, {})).items.map((s) => s.id)).toEqual([created.id]);
    await expect(stacks.get({ ...other, owner: 'tenant-c' }, created.id)).rejects.toMatchObject({
      status: 404,
    });
  });

  it('cancels a queued job at once and a finished one not at all', async () => {
    const port = await freePort();
    // No worker carries zone=nowhere: the job stays queued with the reason.
    const stackId = await createStack(stackYaml('unplaceable', port, { zone: 'nowhere' }));
    const queued = await deploy(stackId);
    await eventually(async () => {
      const res = await api.get(`/jobs/${queued.id}`);
      return res.body.status === 'queued' && String(res.body.error).includes('label zone=nowhere missing');
    });
    // The job, the stack's status and the audit row were stored together (one statement).
    expect((await api.get(`/stacks/${stackId}`)).body.status).toBe('deploying');
    const deployAudit = async () =>
      ((await api.get('/audit?action=stack.deploy_requested&limit=200')).body.events as AuditBody[]).filter(
        (e) => e.target === stackId,
      );
    const [requested, ...more] = await deployAudit();
    expect(more).toEqual([]);
    expect(requested).toMatchObject({
      action: 'stack.deploy_requested',
      outcome: 'success',
      target: stackId,
      details: { job_id: queued.id, revision: 1 },
    });
    expect(requested.actor).toBeTruthy();
    expect(requested.owner).toBeTruthy();
    expect(requested.request_id).toBeTruthy();
    expect(
      t.logs
        .records()
        .filter((r) => r.component === 'audit' && r.audit_action === 'stack.deploy_requested')
        .some((r) => r.target === stackId),
    ).toBe(true);
    // A second deploy while the job is unfinished: 409, and neither an audit row nor a second job.
    const second = await api.post(`/stacks/${stackId}/deploy`);
    expect(second.status, JSON.stringify(second.body)).toBe(409);
    expect((await deployAudit()).map((e) => e.details)).toEqual([{ job_id: queued.id, revision: 1 }]);
    expect(((await api.get(`/jobs?stack_id=${stackId}`)).body.jobs as JobBody[]).map((j) => j.id)).toEqual([
      queued.id,
    ]);
    // The stack has an unfinished job: it cannot be deleted under it.
    const busy = await api.delete(`/stacks/${stackId}`);
    expect(busy.status, JSON.stringify(busy.body)).toBe(409);
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(200);

    const cancel = await api.post(`/jobs/${queued.id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ id: queued.id, status: 'cancelled' });
    const again = await api.post(`/jobs/${queued.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.headers['content-type']).toContain('application/problem+json');
    expect(again.body.code).toBe('conflict');
    const listed = await api.get(`/jobs?stack_id=${stackId}&status=cancelled`);
    expect((listed.body.jobs as JobBody[]).map((j) => j.id)).toEqual([queued.id]);
    await api.delete(`/stacks/${stackId}`);
  });

  it('cancels a running job through the agent, and refuses a second deploy while one runs', async () => {
    const port = await freePort();
    // The service never passes its health check, so the provision job keeps waiting for it.
    const stackId = await createStack(stackYaml('never-healthy', port, { failHealth: true }));
    const job = await deploy(stackId);
    await api.jobUntil(job.id, ['running']);
    await eventually(async () => (await httpGet(port, '/health')) !== 'ECONNREFUSED');

    const busy = await api.post(`/stacks/${stackId}/deploy`);
    expect(busy.status, JSON.stringify(busy.body)).toBe(409);

    const cancel = await api.post(`/jobs/${job.id}/cancel`);
    expect(cancel.status).toBe(202);
    expect(cancel.body.status).toBe('cancelling');
    const done = await api.jobUntil(job.id, ['cancelled', 'failed', 'succeeded']);
    expect(done.status).toBe('cancelled');
    const logs = await api.get(`/jobs/${job.id}/logs`);
    expect(
      (logs.body.lines as { line: string }[]).some((l) => l.line.includes('never passed the health check')),
    ).toBe(true);
    await api.jobUntil((await api.delete(`/stacks/${stackId}`)).body.id as string, ['succeeded']);
    expect(await httpGet(port, '/health')).toBe('ECONNREFUSED');
  });

  it('cleanup ends a stuck job as failed and reverts the node to the last good revision', async () => {
    const port = await freePort();
    const stackId = await createStack(stackYaml('revert-me', port, { version: '1' }));
    await api.jobUntil((await deploy(stackId)).id, ['succeeded']);
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '1' });

    const revised = await api.yaml(
      'put',
      `/stacks/${stackId}`,
      stackYaml('revert-me', port, { version: '2', failHealth: true }),
    );
    expect(revised.status, revised.text).toBe(200);
    expect(revised.body).toMatchObject({ revision: 2, deployed_revision: 1 });
    const stuck = await deploy(stackId, 'dispatched');
    await api.jobUntil(stuck.id, ['running']);
    await eventually(async () => {
      const r = await httpGet(port, '/version');
      return typeof r === 'object' && r.text === '2';
    });

    const cleanup = await api.post(`/jobs/${stuck.id}/cleanup`);
    expect(cleanup.status).toBe(200);
    expect(cleanup.body).toMatchObject({
      job: { id: stuck.id, status: 'failed', error: 'cleaned_up' },
      worker_notified: true,
    });
    // The node went back to revision 1.
    await eventually(async () => {
      const r = await httpGet(port, '/version');
      return typeof r === 'object' && r.text === '1';
    });
    const revisions = await api.get(`/stacks/${stackId}/revisions`);
    expect((revisions.body.revisions as { revision: number }[]).map((r) => r.revision)).toEqual([2, 1]);
    const source = await api.get(`/stacks/${stackId}/revisions/1`);
    expect(source.body.source).toContain('VERSION: "1"');

    // A succeeded job has nothing to clean up.
    const jobs = await api.get(`/jobs?stack_id=${stackId}&status=succeeded`);
    const ok = await api.post(`/jobs/${jobs.body.jobs[0].id as string}/cleanup`);
    expect(ok.status).toBe(409);
    await api.jobUntil((await api.delete(`/stacks/${stackId}`)).body.id as string, ['succeeded']);
  });

  it('restarts a crashed service under on-failure and keeps stacks to their owner', async () => {
    const port = await freePort();
    const stackId = await createStack(stackYaml('crashy', port));
    await api.jobUntil((await deploy(stackId)).id, ['succeeded']);

    // Killed from outside with a failure status: on-failure brings it back.
    const pid = servicePid(agent.dataDir, stackId, 'web');
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await eventually(async () => {
      const again = servicePid(agent.dataDir, stackId, 'web');
      const r = await httpGet(port, '/version');
      return again > 0 && again !== pid && typeof r === 'object' && r.status === 200;
    });

    // Another tenant sees neither the stack nor its jobs.
    const other = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'tenant-b', owner: 'tenant-b', scopes: ['orchestrator:read', 'orchestrator:write'] });
    expect(other.status, other.text).toBe(201);
    const tokenB = await t.token({
      clientId: other.body.client_id as string,
      secret: other.body.client_secret as string,
    });
    const asB = (path: string) =>
      t.http.get(`/api/v1/orchestrator${path}`).set('Authorization', `Bearer ${tokenB.access_token}`);
    expect((await asB(`/stacks/${stackId}`)).status).toBe(404);
    expect((await asB(`/stacks/${stackId}/health`)).status).toBe(404);
    expect((await asB('/stacks')).body.stacks).toEqual([]);
    expect((await asB('/jobs')).body.jobs).toEqual([]);

    await api.delete(`/stacks/${stackId}`);
  });
  // Last: it removes the worker the other tests use.
  it('a running job whose worker is deleted fails, and the stack can be placed again', async () => {
    const port = await freePort();
    const stackId = await createStack(stackYaml('orphaned', port, { failHealth: true }));
    const job = await deploy(stackId);
    await api.jobUntil(job.id, ['running']);
    expect((await api.delete(`/workers/${workerId}`)).status).toBe(204);
    const failed = await api.jobUntil(job.id, ['failed', 'succeeded', 'cancelled']);
    expect(failed).toMatchObject({ status: 'failed', error: `worker ${workerId} was removed` });
    // The sweeper's abort moves the job and its stack in one transaction (docs/jobs.md): the read
    // right after the job's failure sees the stack failed too.
    const stack = await api.get(`/stacks/${stackId}`);
    expect(stack.body).toMatchObject({ status: 'failed', worker_id: null });
    // Not placed any more: deleting it needs no worker.
    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    expect(destroy.body.status).toBe('succeeded');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
  });
});
