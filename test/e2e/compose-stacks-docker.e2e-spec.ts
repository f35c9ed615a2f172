import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { podman, podmanSocket, TEST_IMAGE } from '../support/podman.js';
import { freePort, httpGet, orchestrator } from '../support/stacks.js';
import { volumeScope } from '../../src/server/stacks/volume-scope.js';

/**
 * A Compose file deployed through a real docker-driver agent on podman: data in a named volume
 * outlives replaces, an agent restart and a destroy unless the destroy says otherwise; a CMD-SHELL
 * health check gates service_healthy; a one-shot runs before its service_completed_successfully
 * dependant; interpolated values and an inline config reach the service.
 */
const compose = (port: number, revision: string) => `
name: compose-data
services:
  # Writes its first start's time once into the volume; ready when the file is there.
  db:
    image: ${TEST_IMAGE}
    command: >-
      sh -c "[ -f /data/first ] || cat /proc/sys/kernel/random/uuid > /data/first;
      mkdir -p /srv && cp /data/first /srv/first && trap 'exit 0' TERM; sleep 1; touch /tmp/ready;
      httpd -f -p 8081 -h /data & wait"
    environment:
      REVISION: "${revision}"
    volumes: [data:/data]
    healthcheck:
      test: ["CMD-SHELL", "test -f /tmp/ready"]
      interval: 1s
      retries: 30
  seed:
    image: ${TEST_IMAGE}
    command: ["sh", "-c", "echo seeded-\${SEED_WORD} > /seed/word"]
    volumes: [seed:/seed]
    restart: "no"
  web:
    image: ${TEST_IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
    ports: ["127.0.0.1:${port}:8080"]
    volumes: [seed:/www/seed:ro]
    configs:
      - source: page
        target: /www/index.html
    depends_on:
      db: { condition: service_healthy }
      seed: { condition: service_completed_successfully }
    environment:
      REVISION: "${revision}"
volumes:
  data:
  seed:
configs:
  page:
    content: "hello \${GREETING:-nobody}"
`;

/** The engine's name of one of the stack's volumes: by its owner and name, not its id (docs/compose.md). */
const volumeName = (name: string) => `so-${volumeScope('default', 'compose-data')}_${name}`;

async function volumeExists(name: string): Promise<boolean> {
  try {
    await podman(['volume', 'inspect', name]);
    return true;
  } catch {
    return false;
  }
}

describe('a Compose stack with volumes and start conditions on a real docker agent', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let socket: string;
  let token: string;
  let stamp = '';

  // The same data directory across a restart: the same worker, its certificate and desired state.
  const startAgent = (dataDir?: string) =>
    AgentProcess.start({
      server: t.url,
      token,
      name: 'compose-node',
      ...(dataDir ? { dataDir } : {}),
      args: ['--driver', 'docker', '--docker-socket', socket],
    });

  beforeAll(async () => {
    socket = await podmanSocket();
    // The volumes are named by owner and stack name: a run before this one may have left them.
    for (const name of ['data', 'seed'])
      await podman(['volume', 'rm', '-f', volumeName(name)]).catch(() => '');
    t = await startTestApp({
      env: { HEARTBEAT_INTERVAL: '300ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
    api = orchestrator(t);
    token = (await api.post('/join-tokens', { pre_approved: true })).body.token as string;
    agent = startAgent();
    await eventually(async () => {
      const res = await api.get('/workers');
      const w = (res.body.workers as { name: string; connected: boolean; driver: string }[]).find(
        (x) => x.name === 'compose-node',
      );
      return w !== undefined && w.connected && w.driver === 'docker';
    }, 20_000);
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
    for (const name of ['data', 'seed'])
      await podman(['volume', 'rm', '-f', volumeName(name)]).catch(() => '');
  });

  const send = async (method: 'post' | 'put', path: string, port: number, revision: string) =>
    t.http[method](`/api/v1/orchestrator${path}`)
      .set('Authorization', await t.adminAuth())
      .set('Content-Type', 'application/json')
      .send({ definition: compose(port, revision), variables: { GREETING: 'compose', SEED_WORD: 'abc' } });

  const deploy = async (stackId: string) => {
    const res = await api.post(`/stacks/${stackId}/deploy`);
    expect(res.status).toBe(202);
    const job = await api.jobUntil(res.body.id as string, ['succeeded', 'failed'], 120_000);
    if (job.status !== 'succeeded') {
      // What the agent said, for whoever reads a failure.
      console.error(JSON.stringify((await api.get(`/jobs/${job.id}/logs`)).body));
    }
    return job;
  };

  it('keeps the data across a replace, an agent restart and a destroy', { timeout: 300_000 }, async () => {
    const port = await freePort();
    const created = await send('post', '/stacks', port, '1');
    expect(created.status, created.text).toBe(201);
    const stackId = created.body.id as string;

    const first = await deploy(stackId);
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'succeeded' });
    expect(first.results?.map((r) => [r.name, r.action])).toEqual([
      ['db', 'created'],
      ['seed', 'created'],
      ['web', 'created'],
    ]);
    // The config's inline content, interpolated with the request's variable, is the page served;
    // the one-shot's output in the shared volume is there because web waited for it.
    expect(await httpGet(port, '/')).toEqual({ status: 200, text: 'hello compose' });
    expect(await httpGet(port, '/seed/word')).toEqual({ status: 200, text: 'seeded-abc\n' });
    // The one-shot is stopped, as it should be: the stack is healthy and in sync all the same.
    await eventually(
      async () => (await api.get(`/stacks/${stackId}/health`)).body.overall === 'healthy',
      30_000,
    );
    const health = (await api.get(`/stacks/${stackId}/health`)).body as {
      services: { name: string; status: string }[];
    };
    expect(health.services.find((s) => s.name === 'seed')?.status).toBe('stopped');
    // In sync: the one-shot is not missing, and web's loopback-only port is published on loopback.
    await eventually(
      async () => (await api.get(`/stacks/${stackId}/drift`)).body.status === 'in_sync',
      30_000,
    );

    // web was created only once db was healthy: after db's container had started.
    const started = async (service: string) =>
      new Date(
        (
          await podman([
            'inspect',
            '--format',
            '{{.Created}}',
            `so-${stackId.replace(/-/g, '').slice(0, 12)}-${service}`,
          ])
        )
          .trim()
          .replace(/ \+0000 UTC$/, 'Z')
          .replace(' ', 'T'),
      ).getTime();
    expect(await started('web')).toBeGreaterThan((await started('db')) + 900);

    stamp = (
      await podman(['run', '--rm', '-v', `${volumeName('data')}:/data`, TEST_IMAGE, 'cat', '/data/first'])
    ).trim();
    expect(stamp).toMatch(/^[0-9a-f-]{36}$/);

    // A new revision changes db's environment: its container is replaced, its data is not.
    expect((await send('put', `/stacks/${stackId}`, port, '2')).status).toBe(200);
    const second = await deploy(stackId);
    expect(second.status).toBe('succeeded');
    expect(second.results?.find((r) => r.name === 'db')?.action).toBe('replaced');
    const after = (
      await podman(['run', '--rm', '-v', `${volumeName('data')}:/data`, TEST_IMAGE, 'cat', '/data/first'])
    ).trim();
    expect(after).toBe(stamp);

    // The agent restarts: the stack comes back with the same data.
    await agent.stop();
    agent = startAgent(agent.dataDir);
    await eventually(async () => (await httpGet(port, '/')) !== 'ECONNREFUSED', 30_000);
    expect(await volumeExists(volumeName('data'))).toBe(true);

    // Destroy keeps the volumes, as docker compose down does without -v.
    const destroyed = await api.jobUntil(
      (await api.delete(`/stacks/${stackId}`)).body.id as string,
      ['succeeded', 'failed'],
      60_000,
    );
    expect(destroyed.status).toBe('succeeded');
    expect(await volumeExists(volumeName('data'))).toBe(true);
    expect(await volumeExists(volumeName('seed'))).toBe(true);
  });

  it(
    'gives a stack made again under the same name the volumes a destroy kept; volumes=delete removes them',
    { timeout: 180_000 },
    async () => {
      expect(stamp).not.toBe('');
      const port = await freePort();
      const created = await send('post', '/stacks', port, '1');
      // The first test's stack of the same name is gone: this is another stack, with another id.
      expect(created.status, created.text).toBe(201);
      const stackId = created.body.id as string;
      const job = await deploy(stackId);
      expect(job.status).toBe('succeeded');
      const kept = (
        await podman(['run', '--rm', '-v', `${volumeName('data')}:/data`, TEST_IMAGE, 'cat', '/data/first'])
      ).trim();
      expect(kept).toBe(stamp);
      const res = await api.delete(`/stacks/${stackId}?volumes=delete`);
      expect(res.status).toBe(202);
      expect((await api.jobUntil(res.body.id as string, ['succeeded', 'failed'], 60_000)).status).toBe(
        'succeeded',
      );
      expect(await volumeExists(volumeName('data'))).toBe(false);
      expect(await volumeExists(volumeName('seed'))).toBe(false);
    },
  );

  it('refuses a bind outside the directories the agent allows, naming the option', async () => {
    const created = await api.yaml(
      'post',
      '/stacks',
      `name: binds\nservices:\n  a:\n    image: ${TEST_IMAGE}\n    command: [sleep, "600"]\n    volumes: ["/etc:/host-etc:ro"]\n`,
    );
    expect(created.status, created.text).toBe(201);
    expect((created.body.warnings as { message: string }[])[0].message).toContain('--allow-host-path');
    const job = await deploy(created.body.id as string);
    expect(job.status).toBe('failed');
    expect(JSON.stringify(job.results)).toContain('--allow-host-path');
    await api.jobUntil(
      (await api.delete(`/stacks/${created.body.id as string}`)).body.id as string,
      ['succeeded', 'failed'],
      60_000,
    );
  });

  it('refuses privileged with the key named before anything is stored', async () => {
    const res = await api.yaml(
      'post',
      '/stacks',
      `name: power\nservices:\n  a: { image: ${TEST_IMAGE}, privileged: true }\n`,
    );
    expect(res.status).toBe(422);
    expect(res.body.errors).toMatchObject([
      { path: 'services.a.privileged', message: expect.stringMatching(/^privileged is refused/) },
    ]);
    const list = (await api.get('/stacks')).body as { stacks: { name: string }[] };
    expect(list.stacks.map((s) => s.name)).not.toContain('power');
  });
});
