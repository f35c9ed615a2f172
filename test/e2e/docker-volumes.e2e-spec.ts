import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DockerDriver,
  anonymousVolumeName,
  containerName,
  networkName,
  volumeName,
} from '../../src/agent/drivers/docker.driver.js';
import type { ApplyContext, ServiceSpec, StackRef, VolumeMount } from '../../src/agent/drivers/driver.js';
import { destroyStack, reconcile } from '../../src/agent/drivers/reconcile.js';
import { podman, podmanSocket } from '../support/podman.js';
import { containerSpec } from '../support/service-specs.js';

const LABEL_STACK = 'io.stack-orchestrator.stack-id';

const volume = (target: string, source = '', over: Partial<VolumeMount> = {}): VolumeMount => ({
  type: 'volume',
  source,
  target,
  read_only: false,
  size_bytes: 0,
  ...over,
});

/** A busybox service that writes `text` to `file` and then idles. */
const writer = (name: string, file: string, text: string, over: Partial<ServiceSpec>): ServiceSpec =>
  containerSpec(name, { command: ['sh', '-c', `echo ${text} > ${file}; exec sleep 3600`], ...over });

async function containerId(name: string): Promise<string> {
  return podman(['container', 'inspect', '--format', '{{.Id}}', name]);
}

async function volumeLabels(name: string): Promise<Record<string, string>> {
  return JSON.parse(await podman(['volume', 'inspect', '--format', '{{json .Labels}}', name])) as Record<
    string,
    string
  >;
}

async function volumeExists(name: string): Promise<boolean> {
  return podman(['volume', 'exists', name]).then(
    () => true,
    () => false,
  );
}

async function stackVolumes(stackId: string): Promise<string[]> {
  const out = await podman([
    'volume',
    'ls',
    '--filter',
    `label=${LABEL_STACK}=${stackId}`,
    '--format',
    '{{.Name}}',
  ]);
  return out.split('\n').filter(Boolean).sort();
}

/** `cat file` in the container, once the file is there (the service writes it as it starts). */
async function readIn(container: string, file: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await podman(['exec', container, 'cat', file]);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('docker driver volumes against podman', () => {
  let driver: DockerDriver;
  let hostDir: string;
  const stacks: StackRef[] = [];
  const lines: string[] = [];
  const ctx: ApplyContext = { log: (line) => lines.push(line), signal: new AbortController().signal };

  const newStack = (): StackRef => {
    const stack = { id: randomUUID(), name: `volumes-${stacks.length}` };
    stacks.push(stack);
    return stack;
  };

  beforeAll(async () => {
    hostDir = mkdtempSync(join(tmpdir(), 'so-volumes-e2e-'));
    writeFileSync(join(hostDir, 'page.txt'), 'from the host\n');
    driver = new DockerDriver({
      socketPath: await podmanSocket(),
      log: pino({ level: 'silent' }),
      // busybox sleep as PID 1 ignores SIGTERM: do not wait the default 10 s on replace.
      stopTimeoutSeconds: 1,
      // As docker-driver.e2e-spec.ts: podman-setup.sh's defaults would be replaced by a service's
      // own ulimits, and this process may not grant the engine's nproc.
      ulimits: [
        { name: 'nofile', soft: 1000, hard: 1000 },
        { name: 'nproc', soft: 1000, hard: 1000 },
      ],
      allowHostPaths: [hostDir],
    });
  });

  afterAll(async () => {
    if (!(driver as DockerDriver | undefined)) return;
    for (const stack of stacks) {
      const left = (
        await podman(['ps', '-a', '--filter', `label=${LABEL_STACK}=${stack.id}`, '--format', '{{.Names}}'])
      )
        .split('\n')
        .filter(Boolean);
      if (left.length > 0) await podman(['rm', '-f', '-t', '0', ...left]);
      const volumes = await stackVolumes(stack.id);
      if (volumes.length > 0) await podman(['volume', 'rm', '-f', ...volumes]);
      await podman(['network', 'rm', '-f', networkName(stack.id)]).catch(() => undefined);
    }
    rmSync(hostDir, { recursive: true, force: true });
    await driver.close();
  });

  it('keeps a named volume across a replace, and across a destroy unless delete_volumes', async () => {
    const stack = newStack();
    const engineName = volumeName(stack.id, 'data');
    expect(engineName).toBe(`so-${stack.id.replace(/-/g, '').slice(0, 12)}_data`);
    const first = writer('app', '/data/x', 'data', { volumes: [volume('/data', 'data')] });
    expect(await reconcile(driver, stack, [first], ctx)).toMatchObject([{ action: 'created', ok: true }]);
    const name = containerName(stack.id, 'app');
    expect(await readIn(name, '/data/x')).toBe('data');
    expect(await volumeLabels(engineName)).toMatchObject({
      'io.stack-orchestrator.managed': 'true',
      [LABEL_STACK]: stack.id,
      'io.stack-orchestrator.stack-name': stack.name,
      'io.stack-orchestrator.volume': 'data',
    });
    const before = await containerId(name);

    // A new digest: a new container, which only reads.
    const second = containerSpec('app', { digest: 'sha256:app-2', volumes: [volume('/data', 'data')] });
    expect(await reconcile(driver, stack, [second], ctx)).toMatchObject([{ action: 'replaced', ok: true }]);
    expect(await containerId(name)).not.toBe(before);
    expect(await readIn(name, '/data/x')).toBe('data');

    const listed = (await driver.listVolumes()).filter((v) => v.stackId === stack.id);
    expect(listed).toEqual([
      {
        name: 'data',
        stackId: stack.id,
        anonymous: false,
        engineName,
        createdAt: expect.any(Date) as Date,
        sizeBytes: expect.any(Number) as number,
      },
    ]);

    // Destroy without delete_volumes: the containers and network go, the volume stays and is
    // mounted again by the next deployment.
    await destroyStack(driver, stack, ctx);
    await expect(podman(['network', 'exists', networkName(stack.id)])).rejects.toThrow();
    expect(await volumeExists(engineName)).toBe(true);
    await reconcile(driver, stack, [second], ctx);
    expect(await readIn(name, '/data/x')).toBe('data');

    await destroyStack(driver, stack, { ...ctx, deleteVolumes: true });
    expect(await volumeExists(engineName)).toBe(false);
    expect(await stackVolumes(stack.id)).toEqual([]);
  });

  it("reuses a service's anonymous volume when its container is replaced; delete_volumes removes it", async () => {
    const stack = newStack();
    const engineName = anonymousVolumeName(stack.id, 'cache', '/cache');
    const first = writer('cache', '/cache/x', 'cached', { volumes: [volume('/cache')] });
    expect(await reconcile(driver, stack, [first], ctx)).toMatchObject([{ action: 'created', ok: true }]);
    const name = containerName(stack.id, 'cache');
    expect(await readIn(name, '/cache/x')).toBe('cached');
    expect(await volumeLabels(engineName)).toMatchObject({
      [LABEL_STACK]: stack.id,
      'io.stack-orchestrator.anonymous': 'true',
      'io.stack-orchestrator.service': 'cache',
    });

    const second = containerSpec('cache', { digest: 'sha256:cache-2', volumes: [volume('/cache')] });
    expect(await reconcile(driver, stack, [second], ctx)).toMatchObject([{ action: 'replaced', ok: true }]);
    expect(await readIn(name, '/cache/x')).toBe('cached');
    expect(await stackVolumes(stack.id)).toEqual([engineName]);
    expect((await driver.listVolumes()).filter((v) => v.stackId === stack.id)).toMatchObject([
      { name: engineName, anonymous: true, service: 'cache', engineName },
    ]);

    await destroyStack(driver, stack, ctx);
    expect(await volumeExists(engineName)).toBe(true);
    await destroyStack(driver, stack, { ...ctx, deleteVolumes: true });
    expect(await volumeExists(engineName)).toBe(false);
  });

  it('refuses a bind outside --allow-host-path without touching the running container, and mounts one inside', async () => {
    const stack = newStack();
    const name = containerName(stack.id, 'site');
    const inside = containerSpec('site', {
      volumes: [volume('/srv', hostDir, { type: 'bind', read_only: true })],
    });
    expect(await reconcile(driver, stack, [inside], ctx)).toMatchObject([{ action: 'created', ok: true }]);
    expect(await readIn(name, '/srv/page.txt')).toBe('from the host');
    // Read-only: the container cannot write to the host.
    await expect(podman(['exec', name, 'touch', '/srv/new'])).rejects.toThrow(/read-only/i);
    const before = await containerId(name);

    const outside = containerSpec('site', {
      digest: 'sha256:site-2',
      volumes: [volume('/host-etc', '/etc', { type: 'bind' })],
    });
    const [result] = await reconcile(driver, stack, [outside], ctx);
    expect(result).toMatchObject({ name: 'site', action: 'failed', ok: false });
    expect(result.error).toBe(
      `bind of /etc is refused: the agent allows host paths only under --allow-host-path directories (${hostDir})`,
    );
    expect(await containerId(name)).toBe(before);

    const escape = containerSpec('site', {
      digest: 'sha256:site-3',
      volumes: [volume('/up', `${hostDir}/..`, { type: 'bind' })],
    });
    expect((await reconcile(driver, stack, [escape], ctx))[0].error).toContain('--allow-host-path');
  });

  it('refuses writes to a read-only volume and mounts a tmpfs with its size', async () => {
    const stack = newStack();
    const name = containerName(stack.id, 'box');
    const spec = containerSpec('box', {
      volumes: [
        volume('/ro', 'shared', { read_only: true }),
        volume('/rw', 'shared'),
        { type: 'tmpfs', source: '', target: '/scratch', read_only: false, size_bytes: 8 * 1024 * 1024 },
      ],
    });
    expect(await reconcile(driver, stack, [spec], ctx)).toMatchObject([{ action: 'created', ok: true }]);
    await podman(['exec', name, 'sh', '-c', 'echo shared > /rw/f']);
    expect(await readIn(name, '/ro/f')).toBe('shared');
    await expect(podman(['exec', name, 'sh', '-c', 'echo no > /ro/f'])).rejects.toThrow(/read-only/i);
    const mounts = await podman(['exec', name, 'cat', '/proc/mounts']);
    const scratch = mounts.split('\n').find((line) => line.split(' ')[1] === '/scratch');
    expect(scratch).toMatch(/^tmpfs \/scratch tmpfs .*size=8192k/);
    await destroyStack(driver, stack, { ...ctx, deleteVolumes: true });
    expect(await stackVolumes(stack.id)).toEqual([]);
  });

  it('applies the container options: entrypoint, user, working dir, hostname, labels, aliases, hosts, init, read-only root, limits', async () => {
    const stack = newStack();
    const name = containerName(stack.id, 'opts');
    const spec = containerSpec('opts', {
      command: ['-c', 'exec sleep 3600'],
      cpu: 0.5,
      memory_bytes: 64 * 1024 * 1024,
      container: {
        entrypoint: ['sh'],
        entrypoint_set: true,
        user: '65534:65534',
        working_dir: '/tmp',
        hostname: 'optbox',
        labels: { team: 'shop', [LABEL_STACK]: 'forged' },
        aliases: ['alias-one'],
        extra_hosts: ['db.example:10.1.2.3'],
        stop_signal: 'SIGINT',
        stop_grace_period_ms: 2000,
        init: true,
        read_only: true,
        shm_size_bytes: 16 * 1024 * 1024,
        ulimits: [{ name: 'nofile', soft: 777, hard: 777 }],
        expose: [9100],
        memory_reservation_bytes: 32 * 1024 * 1024,
        restart_max_retries: 4,
        uncapped: true,
        cpu_limit: 0,
        memory_limit_bytes: 0,
      },
    });
    expect(await reconcile(driver, stack, [spec], ctx)).toMatchObject([{ action: 'created', error: '' }]);
    const info = JSON.parse(await podman(['container', 'inspect', name]))[0] as {
      Config: { Labels: Record<string, string>; Entrypoint: string[] | string; StopSignal: string | number };
      HostConfig: {
        Init: boolean;
        ReadonlyRootfs: boolean;
        NanoCpus: number;
        Memory: number;
        MemoryReservation: number;
        ShmSize: number;
        RestartPolicy: { Name: string; MaximumRetryCount: number };
        ExtraHosts: string[];
      };
    };
    expect(info.Config.Labels).toMatchObject({ team: 'shop', [LABEL_STACK]: stack.id });
    expect(info.HostConfig).toMatchObject({
      Init: true,
      ReadonlyRootfs: true,
      NanoCpus: 0,
      Memory: 0,
      MemoryReservation: 32 * 1024 * 1024,
      ShmSize: 16 * 1024 * 1024,
      RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 4 },
      ExtraHosts: ['db.example:10.1.2.3'],
    });
    expect(await podman(['exec', name, 'sh', '-c', 'id -u; pwd; hostname; ulimit -n; ulimit -u'])).toBe(
      '65534\n/tmp\noptbox\n777\n1000',
    );
    expect(await podman(['exec', name, 'grep', 'db.example', '/etc/hosts'])).toContain('10.1.2.3');
    await expect(podman(['exec', name, 'touch', '/root-file'])).rejects.toThrow(/read-only/i);
    // The network alias beside the service name: a second container on the stack's network finds it.
    await reconcile(driver, stack, [spec, containerSpec('peer')], ctx);
    expect(await podman(['exec', containerName(stack.id, 'peer'), 'nslookup', 'alias-one'])).toMatch(
      /Address/,
    );
    // Observe reports the cpu and memory it counts at, not the absent limits (no drift).
    const observed = (await driver.observe()).find((o) => o.stackId === stack.id && o.name === 'opts');
    expect(observed?.actual).toMatchObject({ cpu: 0.5, memory_bytes: 64 * 1024 * 1024 });
    await destroyStack(driver, stack, ctx);
  });

  it('reuses a volume made by hand (and leaves it on delete_volumes) but refuses one of another stack', async () => {
    const stack = newStack();
    const manual = volumeName(stack.id, 'manual');
    const foreign = volumeName(stack.id, 'foreign');
    await podman(['volume', 'create', manual]);
    await podman(['volume', 'create', '--label', `${LABEL_STACK}=${randomUUID()}`, foreign]);
    try {
      const name = containerName(stack.id, 'app');
      const app = writer('app', '/m/x', 'manual', { volumes: [volume('/m', 'manual')] });
      expect(await reconcile(driver, stack, [app], ctx)).toMatchObject([{ action: 'created', ok: true }]);
      expect(await readIn(name, '/m/x')).toBe('manual');
      expect(lines.some((l) => l.includes(`volume ${manual} was not made by the agent`))).toBe(true);

      const other = containerSpec('app', { digest: 'sha256:app-2', volumes: [volume('/f', 'foreign')] });
      const [result] = await reconcile(driver, stack, [other], ctx);
      expect(result.error).toMatch(new RegExp(`^volume ${foreign} belongs to another stack`));
      // Refused before the running container was touched.
      expect(await readIn(name, '/m/x')).toBe('manual');

      await destroyStack(driver, stack, { ...ctx, deleteVolumes: true });
      expect(await volumeExists(manual)).toBe(true);
      expect(await volumeExists(foreign)).toBe(true);
    } finally {
      await podman(['volume', 'rm', '-f', manual, foreign]);
    }
  });
});
