import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { podman, podmanSocket, TEST_IMAGE, TEST_IMAGE_2 } from '../support/podman.js';
import { freePort, httpGet, orchestrator } from '../support/stacks.js';

/**
 * busybox httpd serving the GREETING and a health file; the shell traps SIGTERM so a replace or a
 * destroy does not wait for the stop timeout.
 */
const httpd = (greeting: string) =>
  `["sh", "-c", "mkdir -p /www && echo ok > /www/health && echo $$GREETING > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]`.replace(
    '$$GREETING',
    '$GREETING',
  ) + `\n    env:\n      GREETING: ${greeting}`;

const stackYaml = (name: string, port: number, greeting: string) => `
name: ${name}
stackkit: basement-kit
services:
  web:
    image: ${TEST_IMAGE}
    command: ${httpd(greeting)}
    ports: ["${port}:8080"]
    resources:
      cpu: 0.5
      memory: 64Mi
    health_check:
      path: /health
      port: ${port}
      interval: 1s
`;

describe('a stack deployed through a real docker-driver agent (podman Docker Engine API)', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;

  beforeAll(async () => {
    const socket = await podmanSocket();
    t = await startTestApp({
      env: { HEARTBEAT_INTERVAL: '300ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
    api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    agent = AgentProcess.start({
      server: t.url,
      token: token.body.token as string,
      name: 'docker-node',
      args: ['--driver', 'docker', '--docker-socket', socket],
    });
    await eventually(async () => {
      const res = await api.get('/workers');
      const w = (
        res.body.workers as { name: string; connected: boolean; status: string; driver: string }[]
      ).find((x) => x.name === 'docker-node');
      return (
        w !== undefined && w.connected && w.driver === 'docker' && ['healthy', 'degraded'].includes(w.status)
      );
    }, 20_000);
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  it('deploys, answers through the published port, reports health, replaces on change and destroys', async () => {
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml('docker-web', port, 'hello'));
    expect(created.status, created.text).toBe(201);
    const stackId = created.body.id as string;

    const deploy = await api.post(`/stacks/${stackId}/deploy`);
    expect(deploy.status).toBe(202);
    const job = await api.jobUntil(deploy.body.id as string, ['succeeded', 'failed'], 60_000);
    expect(job, JSON.stringify(job)).toMatchObject({ status: 'succeeded' });
    expect(job.results).toEqual([{ name: 'web', action: 'created', ok: true, error: null }]);
    expect(await httpGet(port, '/')).toEqual({ status: 200, text: 'hello\n' });

    // The container carries the labels that mark what the stack owns.
    const labels = JSON.parse(
      await podman([
        'inspect',
        '--format',
        '{{json .Config.Labels}}',
        `so-${stackId.replace(/-/g, '').slice(0, 12)}-web`,
      ]),
    ) as Record<string, string>;
    expect(labels).toMatchObject({
      'io.stack-orchestrator.managed': 'true',
      'io.stack-orchestrator.stack-id': stackId,
      'io.stack-orchestrator.service': 'web',
    });

    await eventually(
      async () => (await api.get(`/stacks/${stackId}/health`)).body.overall === 'healthy',
      20_000,
    );
    const health = await api.get(`/stacks/${stackId}/health`);
    expect(health.body.services[0]).toMatchObject({
      name: 'web',
      status: 'healthy',
      health_check: { url: `http://127.0.0.1:${port}/health`, status_code: 200 },
    });

    // A new revision with another environment replaces the container.
    const revised = await api.yaml('put', `/stacks/${stackId}`, stackYaml('docker-web', port, 'again'));
    expect(revised.status).toBe(200);
    const second = await api.jobUntil(
      (await api.post(`/stacks/${stackId}/deploy`)).body.id as string,
      ['succeeded', 'failed'],
      60_000,
    );
    expect(second.results).toEqual([{ name: 'web', action: 'replaced', ok: true, error: null }]);
    expect(await httpGet(port, '/')).toEqual({ status: 200, text: 'again\n' });

    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    const destroyed = await api.jobUntil(destroy.body.id as string, ['succeeded', 'failed'], 60_000);
    expect(destroyed.status).toBe('succeeded');
    const left = await podman([
      'ps',
      '-a',
      '--filter',
      `label=io.stack-orchestrator.stack-id=${stackId}`,
      '--format',
      '{{.Names}}',
    ]);
    expect(left).toBe('');
    expect(await httpGet(port, '/')).toBe('ECONNREFUSED');
  });
  it('drift: a container changed by hand is modified, one started by hand is unexpected; resolve restores', async () => {
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml('docker-drift', port, 'hello'));
    const stackId = created.body.id as string;
    await api.jobUntil(
      (await api.post(`/stacks/${stackId}/deploy`)).body.id as string,
      ['succeeded'],
      60_000,
    );
    const drift = async () =>
      (await api.get(`/stacks/${stackId}/drift`)).body as {
        status: string;
        items: {
          resource: string;
          kind: string;
          field: string | null;
          desired: string | null;
          actual: string | null;
        }[];
      };
    await eventually(async () => (await drift()).status === 'in_sync', 20_000);

    // By hand: the container recreated with another image and environment, keeping its labels.
    const name = `so-${stackId.replace(/-/g, '').slice(0, 12)}-web`;
    const labels = JSON.parse(
      await podman(['inspect', '--format', '{{json .Config.Labels}}', name]),
    ) as Record<string, string>;
    const labelArgs = Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    await podman(['rm', '-f', '-t', '0', name]);
    await podman([
      'run',
      '-d',
      '--name',
      name,
      ...labelArgs,
      '-e',
      'GREETING=tampered',
      // The same limits as the definition: only the image and the environment differ.
      '--cpus=0.5',
      '--memory=64m',
      '-p',
      `${port}:8080`,
      TEST_IMAGE_2,
      'sh',
      '-c',
      "mkdir -p /www && echo ok > /www/health && echo $GREETING > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait",
    ]);
    // And a container nobody asked for, carrying the stack's labels.
    await podman([
      'run',
      '-d',
      '--name',
      `so-intruder-${stackId.slice(0, 8)}`,
      '--label',
      'io.stack-orchestrator.managed=true',
      '--label',
      `io.stack-orchestrator.stack-id=${stackId}`,
      '--label',
      'io.stack-orchestrator.service=intruder',
      TEST_IMAGE,
      'sleep',
      '600',
    ]);
    await eventually(async () => (await drift()).items.length >= 3, 20_000);
    const found = await drift();
    expect(found.status).toBe('drifted');
    expect(found.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          resource: 'web',
          kind: 'modified',
          field: 'env.GREETING',
          desired: 'hello',
          actual: 'tampered',
        }),
        expect.objectContaining({
          resource: 'web',
          kind: 'modified',
          field: 'image',
          desired: TEST_IMAGE,
          actual: TEST_IMAGE_2,
        }),
        expect.objectContaining({ resource: 'intruder', kind: 'unexpected' }),
      ]),
    );
    expect(found.items).toHaveLength(3);

    const resolve = await api.post(`/stacks/${stackId}/drift/resolve`);
    expect(resolve.status).toBe(202);
    const job = await api.jobUntil(resolve.body.job_id as string, ['succeeded', 'failed'], 60_000);
    expect(job.results).toEqual(
      expect.arrayContaining([
        { name: 'intruder', action: 'removed', ok: true, error: null },
        { name: 'web', action: 'replaced', ok: true, error: null },
      ]),
    );
    await eventually(async () => {
      const d = await drift();
      return d.status === 'in_sync' && d.items.length === 0;
    }, 20_000);
    expect(await httpGet(port, '/')).toEqual({ status: 200, text: 'hello\n' });
    await api.jobUntil((await api.delete(`/stacks/${stackId}`)).body.id as string, ['succeeded'], 60_000);
  });
});
