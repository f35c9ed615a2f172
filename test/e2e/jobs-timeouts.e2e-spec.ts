import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { freePort, HTTP_SERVICE, httpGet, orchestrator } from '../support/stacks.js';

const stackYaml = (name: string, port: number, failHealth: boolean) => `
name: ${name}
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env: { PORT: "${port}", FAIL_HEALTH: "${failHealth ? '1' : '0'}" }
    ports: [${port}]
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
`;

describe('job attempts and timeouts', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '300ms',
        JOB_TIMEOUT: '3s',
        JOB_ACK_TIMEOUT: '1s',
        JOB_MAX_ATTEMPTS: '3',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
    api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    agent = AgentProcess.start({ server: t.url, token: token.body.token as string, name: 'slow-node' });
    await eventually(async () => {
      const res = await api.get('/workers');
      return (res.body.workers as { connected: boolean; status: string }[]).some(
        (w) => w.connected && ['healthy', 'degraded'].includes(w.status),
      );
    }, 20_000);
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  it('a job that runs past JOB_TIMEOUT fails and the agent stops it', async () => {
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml('too-slow', port, true));
    const deploy = await api.post(`/stacks/${created.body.id as string}/deploy`);
    await api.jobUntil(deploy.body.id as string, ['running']);
    const failed = await api.jobUntil(deploy.body.id as string, ['failed', 'succeeded', 'cancelled'], 15_000);
    expect(failed).toMatchObject({ status: 'failed', error: 'timed out after 3000 ms' });
    // The agent stopped it too (its own timer, or the service's cancel): its record says so.
    await eventually(() =>
      agent
        .records()
        .some(
          (r) =>
            r.msg === 'job finished' &&
            r.job_id === deploy.body.id &&
            r.phase === 'failed' &&
            String(r.error).startsWith('timed out'),
        ),
    );
    const metrics = (await t.http.get('/metrics')).text;
    expect(metrics).toMatch(/stack_jobs_total\{type="provision",status="failed"\} 1/);
  });

  it('a dispatch the agent does not confirm in time is sent again; the job still runs once', async () => {
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml('frozen', port, false));
    const stackId = created.body.id as string;
    // The first deploy places the stack on the worker; the frozen agent then cannot confirm.
    await api.jobUntil((await api.post(`/stacks/${stackId}/deploy`)).body.id as string, ['succeeded']);
    agent.signal('SIGSTOP');
    try {
      const deploy = await api.post(`/stacks/${stackId}/deploy`);
      const id = deploy.body.id as string;
      // Dispatched, unconfirmed for JOB_ACK_TIMEOUT, queued again with the attempt counted.
      await eventually(async () => {
        const job = (await api.get(`/jobs/${id}`)).body as { status: string; attempts: number };
        return job.attempts >= 2;
      }, 15_000);
    } finally {
      agent.signal('SIGCONT');
    }
    const jobs = await api.get(`/jobs?stack_id=${stackId}&limit=1`);
    const last = await api.jobUntil(jobs.body.jobs[0].id as string, ['succeeded', 'failed'], 20_000);
    expect(last.status).toBe('succeeded');
    expect(last.attempts).toBeGreaterThanOrEqual(2);
    // Sent more than once, applied once: the service kept running and was never replaced.
    expect(last.results).toEqual([{ name: 'web', action: 'unchanged', ok: true, error: null }]);
    expect(agent.records().filter((r) => r.msg === 'job started' && r.job_id === last.id)).toHaveLength(1);
    expect(await httpGet(port, '/health')).toEqual({ status: 200, text: 'ok\n' });
  });
});
