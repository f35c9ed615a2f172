import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import type { LogRecord } from '../support/log-capture.js';
import { connectedAgent, freePort, HTTP_SERVICE, orchestrator, FAST_AGENT_ENV } from '../support/stacks.js';

const stackYaml = (port: number) => `
name: debugged
stackkit: basement-kit
variant: default
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
      DB_PASSWORD: "hunter2-literal"
    ports: [${port}]
    resources:
      cpu: 0.1
      memory: 64Mi
    health_check:
      path: /health
      port: ${port}
      interval: 1s
`;

/** What `LOG_LEVEL=debug` must show an operator, and what `info` must not. */
describe('debug and trace records', () => {
  let t: TestApp;
  let agent: AgentProcess;
  let workerId: string;
  let api: ReturnType<typeof orchestrator>;

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_AGENT_ENV });
    api = orchestrator(t);
    ({ agent, workerId } = await connectedAgent(t, 'debug-node'));
  });
  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  const setLevel = async (level: string) =>
    expect(
      (
        await t.http
          .patch('/api/v1/orchestrator/settings')
          .set('Authorization', await t.adminAuth())
          .send({ log_level: level })
      ).status,
    ).toBe(200);

  const since = (mark: number): LogRecord[] => t.logs.records().slice(mark);
  const debugMessages = (records: LogRecord[]) =>
    records.filter((r) => r.level === 'DEBUG' || r.level === 'TRACE').map((r) => r.msg);

  it('at info: no access decisions, agent messages or scheduler runs', async () => {
    const mark = t.logs.lines.length;
    await api.get('/workers');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(debugMessages(since(mark))).toEqual([]);
  });

  it('at debug: the request, its access decision and database time; agent messages; jobs; drift; schedules', async () => {
    await setLevel('debug');
    const mark = t.logs.lines.length;
    await t.http
      .get('/api/v1/orchestrator/workers')
      .set('Authorization', await t.adminAuth())
      .set('X-Request-Id', 'debug-req-1')
      .expect(200);
    const mine = since(mark).filter((r) => r.request_id === 'debug-req-1');
    expect(mine.find((r) => r.msg === 'access decision')).toMatchObject({
      level: 'DEBUG',
      component: 'auth',
      route: 'GET /api/v1/orchestrator/workers',
      client_id: 'test-admin',
      owner: 'default',
      required_scopes: ['orchestrator:read'],
      decision: 'allowed',
    });
    const request = mine.find((r) => r.component === 'http');
    expect(request?.db_queries).toBeGreaterThanOrEqual(1);
    expect(typeof request?.db_ms).toBe('number');

    await eventually(() =>
      since(mark).some(
        (r) =>
          r.msg === 'agent message received' &&
          r.kind === 'heartbeat' &&
          r.worker_id === workerId &&
          typeof r.cpu_percent === 'number',
      ),
    );
    await eventually(() =>
      since(mark).some((r) => r.msg === 'scheduled run' && r.task === 'settings-refresh'),
    );

    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml(port));
    expect(created.status, created.text).toBe(201);
    const deployed = await api.post(`/stacks/${created.body.id as string}/deploy`);
    const job = await api.jobUntil(deployed.body.id as string, ['succeeded', 'failed']);
    expect(job.status).toBe('succeeded');
    const records = since(mark);
    expect(
      records.find((r) => r.msg === 'agent message sent' && r.kind === 'job' && r.job_id === job.id),
    ).toMatchObject({ worker_id: workerId, job_type: 'provision' });
    expect(
      records.find(
        (r) => r.msg === 'agent message received' && r.kind === 'job_event' && r.job_id === job.id,
      ),
    ).toBeDefined();
    expect(
      records.find((r) => r.msg === 'job state changed' && r.job_id === job.id && r.to === 'succeeded'),
    ).toMatchObject({ from: 'running', event: 'succeeded' });
    await eventually(() =>
      since(mark).some((r) => r.msg === 'drift computed' && r.stack_id === created.body.id),
    );
    // Debug summarizes: no message bodies, no definition values.
    expect(t.logs.lines.slice(mark).join('\n')).not.toContain('hunter2-literal');
  });

  it('at trace: message bodies, with secrets and literal environment values redacted', async () => {
    await setLevel('trace');
    const mark = t.logs.lines.length;
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml(port).replace('debugged', 'traced'));
    const deployed = await api.post(`/stacks/${created.body.id as string}/deploy`);
    const job = await api.jobUntil(deployed.body.id as string, ['succeeded', 'failed']);
    const sent = since(mark).find(
      (r) => r.msg === 'agent message sent' && r.kind === 'job' && r.job_id === job.id,
    );
    expect(sent?.body).toMatchObject({ job: { job_id: job.id, services: [{ name: 'web' }] } });
    expect(JSON.stringify(sent?.body)).toContain('"DB_PASSWORD":"[REDACTED]"');
    expect(t.logs.lines.slice(mark).join('\n')).not.toContain('hunter2-literal');
  });

  it('back at info, they stop', async () => {
    await setLevel('info');
    const mark = t.logs.lines.length;
    await api.get('/workers');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(debugMessages(since(mark))).toEqual([]);
  });
});
