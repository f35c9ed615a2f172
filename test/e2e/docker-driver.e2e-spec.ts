import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver, containerName, networkName } from '../../src/agent/drivers/docker.driver.js';
import type { ApplyContext, ServiceSpec, StackRef } from '../../src/agent/drivers/driver.js';
import { destroyStack, reconcile } from '../../src/agent/drivers/reconcile.js';
import { MISSING_IMAGE, TEST_IMAGE, TEST_IMAGE_2, podman, podmanSocket } from '../support/podman.js';
import { freePort } from '../support/ports.js';
import { containerSpec } from '../support/service-specs.js';

// busybox httpd serving one file; `exec` so the container's main process is httpd itself.
const HTTPD = ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www'];
const MiB = 1024 * 1024;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (${String(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The page from the host through the published port, once httpd answers. */
async function httpGet(port: number): Promise<{ status: number; body: string }> {
  return waitFor(`HTTP on 127.0.0.1:${port}`, async () => {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, body: await res.text() };
  });
}

function web(port: number, overrides: Partial<ServiceSpec> = {}): ServiceSpec {
  return {
    name: 'web',
    image: TEST_IMAGE,
    command: HTTPD,
    env: { GREETING: 'hello' },
    ports: [{ container: 8080, host: port, protocol: 'tcp' }],
    cpu: 0,
    memory_bytes: 0,
    restart: 'on-failure',
    health_check: null,
    digest: 'sha256:web-1',
    ...overrides,
  };
}

const idle = containerSpec;

interface Inspected {
  Id: string;
  Config: { Labels: Record<string, string> };
  HostConfig: { RestartPolicy: { Name: string } };
  State: { Running: boolean };
}

async function inspect(name: string): Promise<Inspected> {
  return (JSON.parse(await podman(['container', 'inspect', name])) as Inspected[])[0];
}

/** Names of the containers that carry this stack's id label, all states. */
async function stackContainers(stackId: string): Promise<string[]> {
  const out = await podman([
    'ps',
    '-a',
    '--filter',
    `label=io.stack-orchestrator.stack-id=${stackId}`,
    '--format',
    '{{.Names}}',
  ]);
  return out.split('\n').filter(Boolean).sort();
}

describe('the docker driver against podman', () => {
  let driver: DockerDriver;
  const stacks: StackRef[] = [];
  const lines: string[] = [];
  const ctx: ApplyContext = { log: (line) => lines.push(line), signal: new AbortController().signal };

  const newStack = (): StackRef => {
    const stack = { id: randomUUID(), name: `test-${stacks.length}` };
    stacks.push(stack);
    return stack;
  };

  beforeAll(async () => {
    driver = new DockerDriver({
      socketPath: await podmanSocket(),
      log: pino({ level: 'silent' }),
      // Not the 1024 podman-setup.sh configures as podman's default, so the test sees ours applied.
      ulimits: [
        { name: 'nofile', soft: 1000, hard: 1000 },
        { name: 'nproc', soft: 1000, hard: 1000 },
      ],
      // httpd as the container's PID 1 ignores SIGTERM: do not wait the default 10 s on replace.
      stopTimeoutSeconds: 1,
    });
  });

  afterAll(async () => {
    // Unset when beforeAll failed (no podman): its error is the one to see.
    if (!(driver as DockerDriver | undefined)) return;
    // By hand and without a grace period: destroy has its own test.
    for (const stack of stacks) {
      const left = await stackContainers(stack.id);
      if (left.length > 0) await podman(['rm', '-f', '-t', '0', ...left]);
      await podman(['network', 'rm', '-f', networkName(stack.id)]).catch(() => undefined);
    }
    await driver.close();
  });

  it('creates and starts a service whose published port answers from the host, then leaves it alone', async () => {
    const stack = newStack();
    const port = await freePort();

    const first = await reconcile(driver, stack, [web(port)], ctx);
    expect(first).toEqual([{ name: 'web', action: 'created', ok: true, error: '' }]);
    expect(await httpGet(port)).toEqual({ status: 200, body: 'ok\n' });

    const name = containerName(stack.id, 'web');
    expect(name).toBe(`so-${stack.id.replace(/-/g, '').slice(0, 12)}-web`);
    const container = await inspect(name);
    expect(container.Config.Labels).toMatchObject({
      'io.stack-orchestrator.managed': 'true',
      'io.stack-orchestrator.stack-id': stack.id,
      'io.stack-orchestrator.stack-name': stack.name,
      'io.stack-orchestrator.service': 'web',
      'io.stack-orchestrator.digest': 'sha256:web-1',
    });
    expect(container.HostConfig.RestartPolicy.Name).toBe('on-failure');
    // The driver's ulimits, not podman's defaults.
    expect(await podman(['exec', name, 'sh', '-c', 'ulimit -n; ulimit -u'])).toBe('1000\n1000');

    const second = await reconcile(driver, stack, [web(port)], ctx);
    expect(second).toEqual([{ name: 'web', action: 'unchanged', ok: true, error: '' }]);
    expect((await inspect(name)).Id).toBe(container.Id);
  });

  it('replaces a service when its digest changes, with the new environment and image', async () => {
    const stack = newStack();
    const port = await freePort();
    await reconcile(driver, stack, [web(port)], ctx);
    const name = containerName(stack.id, 'web');
    const before = await inspect(name);

    const changed = web(port, { env: { GREETING: 'bonjour' }, digest: 'sha256:web-2' });
    expect(await reconcile(driver, stack, [changed], ctx)).toEqual([
      { name: 'web', action: 'replaced', ok: true, error: '' },
    ]);
    const after = await inspect(name);
    expect(after.Id).not.toBe(before.Id);
    expect(after.Config.Labels['io.stack-orchestrator.digest']).toBe('sha256:web-2');
    expect(await podman(['exec', name, 'sh', '-c', 'echo $GREETING'])).toBe('bonjour');
    expect(await httpGet(port)).toEqual({ status: 200, body: 'ok\n' });

    const newImage = web(port, { image: TEST_IMAGE_2, env: { GREETING: 'bonjour' }, digest: 'sha256:web-3' });
    expect(await reconcile(driver, stack, [newImage], ctx)).toEqual([
      { name: 'web', action: 'replaced', ok: true, error: '' },
    ]);
    const observed = (await driver.observe()).find((s) => s.stackId === stack.id);
    expect(observed?.digest).toBe('sha256:web-3');
    expect(observed?.actual?.image).toBe(TEST_IMAGE_2);
    // busybox:2 sets STACK_TEST_IMAGE=busybox-2 itself: an image default, not the service's.
    expect(observed?.actual?.env).toEqual({ GREETING: 'bonjour' });
  });

  it('removes the containers of services that are no longer desired', async () => {
    const stack = newStack();
    const port = await freePort();
    const created = await reconcile(driver, stack, [web(port), idle('worker')], ctx);
    expect(created.map((r) => [r.name, r.action, r.ok])).toEqual([
      ['web', 'created', true],
      ['worker', 'created', true],
    ]);
    expect(await stackContainers(stack.id)).toEqual(
      [containerName(stack.id, 'web'), containerName(stack.id, 'worker')].sort(),
    );

    const results = await reconcile(driver, stack, [web(port)], ctx);
    expect(results).toEqual([
      { name: 'worker', action: 'removed', ok: true, error: '' },
      { name: 'web', action: 'unchanged', ok: true, error: '' },
    ]);
    expect(await stackContainers(stack.id)).toEqual([containerName(stack.id, 'web')]);
    expect(lines).toContain(`worker: removing ${containerName(stack.id, 'worker')}`);
  });

  it('observes the effective configuration: env without image defaults, ports, limits, digest', async () => {
    const stack = newStack();
    const port = await freePort();
    const local = await freePort();
    const limited = web(port, {
      // The same container port published twice: on the agent's default address, and on loopback.
      ports: [
        { container: 8080, host: port, protocol: 'tcp' },
        { container: 8080, host: local, protocol: 'tcp', address: '127.0.0.1' },
      ],
      // PATH equals the image's own value but is the service's: it is reported.
      env: { GREETING: 'hello', STACK_TEST_IMAGE: 'overridden', PATH: '/bin' },
      cpu: 0.5,
      memory_bytes: 64 * MiB,
      restart: 'always',
      digest: 'sha256:limited',
    });
    // No command: the image's own (`sh`, which exits at once without a terminal).
    const oneShot = idle('once', { command: [], restart: 'never', env: {}, digest: 'sha256:once' });
    const results = await reconcile(driver, stack, [limited, oneShot], ctx);
    expect(results.every((r) => r.ok)).toBe(true);
    await httpGet(port);
    expect((await httpGet(local)).status).toBe(200);
    expect((await inspect(containerName(stack.id, 'web'))).HostConfig.RestartPolicy.Name).toBe('always');
    expect((await inspect(containerName(stack.id, 'once'))).HostConfig.RestartPolicy.Name).toBe('no');

    const once = await waitFor('the one-shot service to exit', async () => {
      const found = (await driver.observe()).find((s) => s.stackId === stack.id && s.name === 'once');
      return found?.status === 'exited' ? found : undefined;
    });
    expect(once).toMatchObject({ running: false, exitCode: 0, digest: 'sha256:once' });
    expect(once.actual).toEqual({
      image: TEST_IMAGE,
      command: [],
      env: {},
      ports: [],
      cpu: 0,
      memory_bytes: 0,
    });

    const observed = (await driver.observe()).find((s) => s.stackId === stack.id && s.name === 'web');
    expect(observed).toMatchObject({
      status: 'running',
      running: true,
      digest: 'sha256:limited',
      restarts: 0,
      exitCode: null,
    });
    expect(observed?.startedAt).toBeInstanceOf(Date);
    expect(Math.abs(Date.now() - observed!.startedAt!.getTime())).toBeLessThan(60_000);
    expect(observed?.actual).toEqual({
      image: TEST_IMAGE,
      command: HTTPD,
      env: { GREETING: 'hello', STACK_TEST_IMAGE: 'overridden', PATH: '/bin' },
      ports: [
        {
          container: 8080,
          host: Math.min(port, local),
          protocol: 'tcp',
          ...(local < port ? { address: '127.0.0.1' } : {}),
        },
        {
          container: 8080,
          host: Math.max(port, local),
          protocol: 'tcp',
          ...(local > port ? { address: '127.0.0.1' } : {}),
        },
      ],
      cpu: 0.5,
      memory_bytes: 64 * MiB,
    });
  });

  it('reports a container stopped by hand as not running, and apply starts it again', async () => {
    const stack = newStack();
    const port = await freePort();
    await reconcile(driver, stack, [web(port)], ctx);
    await httpGet(port);
    const name = containerName(stack.id, 'web');
    const id = (await inspect(name)).Id;

    await podman(['stop', '-t', '1', name]);
    const stopped = (await driver.observe()).find((s) => s.stackId === stack.id);
    expect(stopped).toMatchObject({ name: 'web', status: 'exited', running: false });
    expect(stopped?.exitCode).not.toBeNull();

    expect(await reconcile(driver, stack, [web(port)], ctx)).toEqual([
      { name: 'web', action: 'started', ok: true, error: '' },
    ]);
    expect((await inspect(name)).Id).toBe(id);
    expect(await httpGet(port)).toEqual({ status: 200, body: 'ok\n' });
  });

  it('destroys every container of one stack and nothing of another', async () => {
    const doomed = newStack();
    const kept = newStack();
    await reconcile(driver, doomed, [idle('a'), idle('b')], ctx);
    await reconcile(driver, kept, [idle('a')], ctx);

    const results = await destroyStack(driver, doomed, ctx);
    expect(results.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { name: 'a', action: 'removed', ok: true, error: '' },
      { name: 'b', action: 'removed', ok: true, error: '' },
    ]);
    expect(await stackContainers(doomed.id)).toEqual([]);
    expect(await stackContainers(kept.id)).toEqual([containerName(kept.id, 'a')]);
    const observed = await driver.observe();
    expect(observed.filter((s) => s.stackId === doomed.id)).toEqual([]);
    expect(observed.filter((s) => s.stackId === kept.id).map((s) => s.name)).toEqual(['a']);
    expect(await destroyStack(driver, doomed, ctx)).toEqual([]);
  });

  it('fails only the service whose image is missing, and keeps its running container', async () => {
    const stack = newStack();
    const port = await freePort();
    await reconcile(driver, stack, [web(port)], ctx);
    await httpGet(port);

    const broken = web(port, { image: MISSING_IMAGE, digest: 'sha256:web-missing' });
    const results = await reconcile(driver, stack, [broken, idle('worker')], ctx);
    expect(results[0]).toMatchObject({ name: 'web', action: 'failed', ok: false });
    expect(results[0].error).toContain(
      `image ${MISSING_IMAGE} is not present on this node and could not be pulled`,
    );
    expect(results[1]).toEqual({ name: 'worker', action: 'created', ok: true, error: '' });
    // The old container was not removed for an image that cannot be had.
    expect(await httpGet(port)).toEqual({ status: 200, body: 'ok\n' });
    const observed = (await driver.observe()).find((s) => s.stackId === stack.id && s.name === 'web');
    expect(observed?.digest).toBe('sha256:web-1');
  });

  it('applies nothing once the job is cancelled', async () => {
    const stack = newStack();
    const controller = new AbortController();
    controller.abort();
    const results = await reconcile(driver, stack, [idle('a'), idle('b')], {
      ...ctx,
      signal: controller.signal,
    });
    expect(results.map((r) => [r.name, r.action, r.ok])).toEqual([
      ['a', 'failed', false],
      ['b', 'failed', false],
    ]);
    expect(await stackContainers(stack.id)).toEqual([]);
  });

  it('puts a service’s files in its container before it starts; services reach each other by name on the stack’s network, which goes with the stack', async () => {
    const stack = newStack();
    const [configPort, clientPort] = [await freePort(), await freePort()];
    const page = 'scrape_configs: []\n'.repeat(50);
    const config = web(configPort, {
      name: 'config',
      command: ['httpd', '-f', '-p', '8080', '-h', '/srv/www'],
      digest: 'sha256:config-1',
      files: [
        { path: '/srv/www/index.html', content: page, mode: 0o644 },
        { path: '/srv/www/nested/deep/secret', content: 'sos_not-in-any-log', mode: 0o444 },
      ],
    });
    // Fetches the other container's page by its service name, then serves what it got.
    const client = web(clientPort, {
      name: 'client',
      command: [
        'sh',
        '-c',
        'mkdir -p /www && until wget -q -O /www/fetched http://config:8080/; do sleep 0.2; done; exec httpd -f -p 8080 -h /www',
      ],
      digest: 'sha256:client-1',
    });
    const results = await reconcile(driver, stack, [config, client], ctx);
    expect(results).toEqual([
      { name: 'config', action: 'created', ok: true, error: '' },
      { name: 'client', action: 'created', ok: true, error: '' },
    ]);
    expect(await httpGet(configPort)).toEqual({ status: 200, body: page });
    const name = containerName(stack.id, 'config');
    expect(
      await podman([
        'exec',
        name,
        'stat',
        '-c',
        '%a %u',
        '/srv/www/index.html',
        '/srv/www/nested/deep/secret',
      ]),
    ).toBe('644 0\n444 0');
    // Readable by the unprivileged users the monitoring images run as.
    expect(await podman(['exec', '--user', '65534', name, 'cat', '/srv/www/nested/deep/secret'])).toBe(
      'sos_not-in-any-log',
    );
    expect(lines).toContain(`config: writing /srv/www/index.html, /srv/www/nested/deep/secret`);
    expect(lines.join('\n')).not.toContain('sos_not-in-any-log');

    const fetched = await waitFor('the page fetched by name', async () => {
      const res = await fetch(`http://127.0.0.1:${clientPort}/fetched`, {
        signal: AbortSignal.timeout(2000),
      });
      return res.status === 200 ? await res.text() : undefined;
    });
    expect(fetched).toBe(page);
    expect(await podman(['network', 'inspect', '--format', '{{.Labels}}', networkName(stack.id)])).toContain(
      `io.stack-orchestrator.stack-id:${stack.id}`,
    );

    // A changed file is a new digest (the service computes it): the container is replaced with the new content.
    const changed = {
      ...config,
      digest: 'sha256:config-2',
      files: [{ path: '/srv/www/index.html', content: 'v2\n', mode: 0o644 }],
    };
    expect(await reconcile(driver, stack, [changed, client], ctx)).toEqual([
      { name: 'config', action: 'replaced', ok: true, error: '' },
      { name: 'client', action: 'unchanged', ok: true, error: '' },
    ]);
    expect(await httpGet(configPort)).toEqual({ status: 200, body: 'v2\n' });

    await destroyStack(driver, stack, ctx);
    expect(await stackContainers(stack.id)).toEqual([]);
    await expect(podman(['network', 'exists', networkName(stack.id)])).rejects.toThrow();
  });
});
