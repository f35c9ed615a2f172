import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ContainerOptions, ServiceSpec } from './driver.js';
import {
  anonymousVolumeName,
  createOptions,
  mergeUlimits,
  observedService,
  type Ulimit,
  volumeName,
  volumesOf,
} from './docker-containers.js';
import { checkHostPath } from './docker.driver.js';

const stack = { id: '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40', name: 'shop' };
const PREFIX = 'so-6b0f3d523a51';

const spec = (over: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name: 'web',
  image: 'busybox',
  command: [],
  env: {},
  ports: [],
  cpu: 0.5,
  memory_bytes: 64 * 1024 * 1024,
  restart: 'on-failure',
  health_check: null,
  digest: 'sha256:web',
  ...over,
});

/** Container options that set nothing (what the server sends for an uncapped service alone). */
const none: ContainerOptions = {
  entrypoint: [],
  entrypoint_set: false,
  user: '',
  working_dir: '',
  hostname: '',
  labels: {},
  aliases: [],
  extra_hosts: [],
  stop_signal: '',
  stop_grace_period_ms: 0,
  init: false,
  read_only: false,
  shm_size_bytes: 0,
  ulimits: [],
  expose: [],
  memory_reservation_bytes: 0,
  restart_max_retries: 0,
  uncapped: false,
  cpu_limit: 0,
  memory_limit_bytes: 0,
};

const host: { publishAddress: string; ulimits: Ulimit[] } = { publishAddress: '', ulimits: [] };
const options = (over: Partial<ServiceSpec>, agent = host) => createOptions(stack, spec(over), 'c', agent);
const withContainer = (c: Partial<ContainerOptions>, agent = host) =>
  options({ container: { ...none, ...c } }, agent);

describe('docker create options: volumes', () => {
  it('names a named volume so-<12 hex>_<name> and mounts it read-write or read-only', () => {
    expect(volumeName(stack.id, 'data')).toBe(`${PREFIX}_data`);
    const o = options({
      volumes: [
        { type: 'volume', source: 'data', target: '/data', read_only: false, size_bytes: 0 },
        { type: 'volume', source: 'conf', target: '/etc/app', read_only: true, size_bytes: 0 },
      ],
    });
    expect(o.HostConfig?.Mounts).toEqual([
      { Type: 'volume', Source: `${PREFIX}_data`, Target: '/data', ReadOnly: false },
      { Type: 'volume', Source: `${PREFIX}_conf`, Target: '/etc/app', ReadOnly: true },
    ]);
  });

  it('gives an anonymous volume a name from the service and its target, the same for every container', () => {
    const hash = createHash('sha256').update('/cache').digest('hex').slice(0, 12);
    expect(anonymousVolumeName(stack.id, 'web', '/cache')).toBe(`${PREFIX}_web_anon_${hash}`);
    const volumes = [
      { type: 'volume' as const, source: '', target: '/cache', read_only: false, size_bytes: 0 },
    ];
    const first = options({ volumes });
    const second = options({ volumes, digest: 'sha256:web-2', image: 'busybox:2' });
    expect(first.HostConfig?.Mounts).toEqual([
      { Type: 'volume', Source: `${PREFIX}_web_anon_${hash}`, Target: '/cache', ReadOnly: false },
    ]);
    expect(second.HostConfig?.Mounts).toEqual(first.HostConfig?.Mounts);
    expect(anonymousVolumeName(stack.id, 'api', '/cache')).not.toBe(
      anonymousVolumeName(stack.id, 'web', '/cache'),
    );
  });

  it('labels the volumes it creates: named with their name, anonymous with the service too', () => {
    const labels = {
      'io.stack-orchestrator.managed': 'true',
      'io.stack-orchestrator.stack-id': stack.id,
      'io.stack-orchestrator.stack-name': 'shop',
      'io.stack-orchestrator.volume-scope': PREFIX.slice(3),
    };
    const anon = anonymousVolumeName(stack.id, 'web', '/cache');
    expect(
      volumesOf(
        stack,
        spec({
          volumes: [
            { type: 'volume', source: 'data', target: '/data', read_only: false, size_bytes: 0 },
            { type: 'volume', source: '', target: '/cache', read_only: false, size_bytes: 0 },
            { type: 'bind', source: '/srv', target: '/srv', read_only: false, size_bytes: 0 },
            { type: 'tmpfs', source: '', target: '/tmp', read_only: false, size_bytes: 0 },
          ],
        }),
      ),
    ).toEqual([
      { name: `${PREFIX}_data`, labels: { ...labels, 'io.stack-orchestrator.volume': 'data' } },
      {
        name: anon,
        labels: {
          ...labels,
          'io.stack-orchestrator.volume': anon,
          'io.stack-orchestrator.anonymous': 'true',
          'io.stack-orchestrator.service': 'web',
        },
      },
    ]);
  });

  it("names the volumes by the stack's volume scope when it has one, so a stack made again finds them", () => {
    const scoped = { ...stack, volumeScope: '0123456789ab' };
    const spec1 = spec({
      volumes: [
        { type: 'volume', source: 'data', target: '/data', read_only: false, size_bytes: 0 },
        { type: 'volume', source: '', target: '/cache', read_only: false, size_bytes: 0 },
      ],
    });
    const made = volumesOf(scoped, spec1);
    expect(made.map((v) => v.name)).toEqual([
      'so-0123456789ab_data',
      anonymousVolumeName('0123456789ab', 'web', '/cache'),
    ]);
    expect(made[1].name).toMatch(/^so-0123456789ab_web_anon_[0-9a-f]{12}$/);
    expect(made[0].labels['io.stack-orchestrator.volume-scope']).toBe('0123456789ab');
    // Another stack id of the same scope gets the same names; the mounts use them.
    const again = { ...scoped, id: '11111111-2222-3333-4444-555555555555' };
    expect(volumesOf(again, spec1).map((v) => v.name)).toEqual(made.map((v) => v.name));
    const o = createOptions(again, spec1, 'c', { publishAddress: '', ulimits: [] });
    expect(o.HostConfig?.Mounts?.map((m) => m.Source)).toEqual(made.map((v) => v.name));
  });

  it('mounts a bind by its host path and a tmpfs with its size when it has one', () => {
    const o = options({
      volumes: [
        { type: 'bind', source: '/srv/site', target: '/www', read_only: true, size_bytes: 0 },
        { type: 'tmpfs', source: '', target: '/run', read_only: false, size_bytes: 0 },
        { type: 'tmpfs', source: '', target: '/scratch', read_only: false, size_bytes: 1048576 },
      ],
    });
    expect(o.HostConfig?.Mounts).toEqual([
      { Type: 'bind', Source: '/srv/site', Target: '/www', ReadOnly: true },
      { Type: 'tmpfs', Source: '', Target: '/run', ReadOnly: false },
      {
        Type: 'tmpfs',
        Source: '',
        Target: '/scratch',
        ReadOnly: false,
        TmpfsOptions: { SizeBytes: 1048576 },
      },
    ]);
  });

  it('sets no Mounts for a service without volumes', () => {
    expect(options({}).HostConfig).not.toHaveProperty('Mounts');
    expect(options({ volumes: [] }).HostConfig).not.toHaveProperty('Mounts');
  });
});

describe('docker create options: container options', () => {
  it('leaves everything at the engine default when the options set nothing', () => {
    expect(withContainer({})).toEqual(options({}));
    expect(options({ container: null })).toEqual(options({}));
  });

  it('sets the entrypoint only when given; an empty one clears the image entrypoint', () => {
    expect(withContainer({ entrypoint: ['/bin/sh', '-c'], entrypoint_set: true }).Entrypoint).toEqual([
      '/bin/sh',
      '-c',
    ]);
    expect(withContainer({ entrypoint: [], entrypoint_set: true }).Entrypoint).toEqual([]);
    expect(withContainer({ entrypoint: [] })).not.toHaveProperty('Entrypoint');
  });

  it('sets user, working directory, hostname and stop signal', () => {
    const o = withContainer({
      user: '1000:1000',
      working_dir: '/app',
      hostname: 'box',
      stop_signal: 'SIGINT',
    });
    expect(o).toMatchObject({ User: '1000:1000', WorkingDir: '/app', Hostname: 'box', StopSignal: 'SIGINT' });
  });

  it('turns the stop grace period into StopTimeout seconds (rounded up) and a label', () => {
    const o = withContainer({ stop_grace_period_ms: 2500 });
    expect(o.StopTimeout).toBe(3);
    expect(o.Labels?.['io.stack-orchestrator.stop-timeout']).toBe('3');
    expect(withContainer({})).not.toHaveProperty('StopTimeout');
  });

  it('adds the service labels under ours: ours win on a clash', () => {
    const o = withContainer({
      labels: {
        team: 'shop',
        'io.stack-orchestrator.stack-id': 'forged',
        'io.stack-orchestrator.digest': 'x',
      },
    });
    expect(o.Labels).toMatchObject({
      team: 'shop',
      'io.stack-orchestrator.stack-id': stack.id,
      'io.stack-orchestrator.digest': 'sha256:web',
    });
  });

  it('adds network aliases beside the service name', () => {
    const o = withContainer({ aliases: ['www', 'web'] });
    expect(o.NetworkingConfig?.EndpointsConfig?.[PREFIX]).toEqual({ Aliases: ['web', 'www'] });
  });

  it('sets extra hosts, init, a read-only root, shm size and memory reservation', () => {
    const o = withContainer({
      extra_hosts: ['db.local:10.0.0.5'],
      init: true,
      read_only: true,
      shm_size_bytes: 268435456,
      memory_reservation_bytes: 33554432,
    });
    expect(o.HostConfig).toMatchObject({
      ExtraHosts: ['db.local:10.0.0.5'],
      Init: true,
      ReadonlyRootfs: true,
      ShmSize: 268435456,
      MemoryReservation: 33554432,
    });
  });

  it('exposes ports without publishing them, beside the published ones', () => {
    const o = createOptions(
      stack,
      spec({
        ports: [{ container: 80, host: 8080, protocol: 'tcp' }],
        container: { ...none, expose: [9000, 80] },
      }),
      'c',
      host,
    );
    expect(o.ExposedPorts).toEqual({ '80/tcp': {}, '9000/tcp': {} });
    expect(Object.keys(o.HostConfig?.PortBindings as object)).toEqual(['80/tcp']);
  });

  it('limits on-failure restarts to restart_max_retries', () => {
    expect(withContainer({ restart_max_retries: 3 }).HostConfig?.RestartPolicy).toEqual({
      Name: 'on-failure',
      MaximumRetryCount: 3,
    });
    expect(options({}).HostConfig?.RestartPolicy).toEqual({ Name: 'on-failure', MaximumRetryCount: 0 });
    expect(
      options({ restart: 'always', container: { ...none, restart_max_retries: 3 } }).HostConfig
        ?.RestartPolicy,
    ).toEqual({ Name: 'always' });
  });

  it('sets no cpu or memory limit for an uncapped service, and says what it counts at in a label', () => {
    const capped = options({});
    expect(capped.HostConfig).toMatchObject({ NanoCpus: 500_000_000, Memory: 64 * 1024 * 1024 });
    const o = withContainer({ uncapped: true });
    expect(o.HostConfig).not.toHaveProperty('NanoCpus');
    expect(o.HostConfig).not.toHaveProperty('Memory');
    expect(JSON.parse(o.Labels?.['io.stack-orchestrator.uncapped'] ?? '')).toEqual({
      cpu: 0.5,
      memory_bytes: 64 * 1024 * 1024,
      cpu_limit: 0,
      memory_limit_bytes: 0,
    });
  });

  it("caps an uncapped service at its own (Compose's) limits, and reports it at what it counts at", () => {
    const o = withContainer({ uncapped: true, cpu_limit: 1.5, memory_limit_bytes: 512 * 1024 * 1024 });
    expect(o.HostConfig).toMatchObject({ NanoCpus: 1_500_000_000, Memory: 512 * 1024 * 1024 });
    const info = {
      Config: { Labels: o.Labels, Env: [], Cmd: [], Image: 'busybox' },
      HostConfig: { PortBindings: {}, NanoCpus: 1_500_000_000, Memory: 512 * 1024 * 1024 },
      State: {
        Status: 'running',
        Running: true,
        Paused: false,
        Restarting: false,
        StartedAt: '',
        ExitCode: 0,
      },
      RestartCount: 0,
    } as unknown as Parameters<typeof observedService>[0];
    expect(observedService(info, { env: {}, cmd: [] }).actual).toMatchObject({
      cpu: 0.5,
      memory_bytes: 64 * 1024 * 1024,
    });
    // A limit changed behind our back still shows.
    const changed = { ...info, HostConfig: { PortBindings: {}, NanoCpus: 3e9, Memory: 0 } } as typeof info;
    expect(observedService(changed, { env: {}, cmd: [] }).actual).toMatchObject({ cpu: 3 });
  });

  it('reports an uncapped container at the cpu and memory it counts at, so it is no drift', () => {
    const o = withContainer({ uncapped: true });
    const info = {
      Config: { Labels: o.Labels, Env: [], Cmd: [], Image: 'busybox' },
      HostConfig: { PortBindings: {}, NanoCpus: 0, Memory: 0 },
      State: {
        Status: 'running',
        Running: true,
        Paused: false,
        Restarting: false,
        StartedAt: '',
        ExitCode: 0,
      },
      RestartCount: 0,
    } as unknown as Parameters<typeof observedService>[0];
    expect(observedService(info, { env: {}, cmd: [] }).actual).toMatchObject({
      cpu: 0.5,
      memory_bytes: 64 * 1024 * 1024,
    });
  });

  it("merges the service's ulimits over the agent's, the service winning per name", () => {
    const agent = {
      publishAddress: '',
      ulimits: [
        { name: 'nofile', soft: 1024, hard: 1024 },
        { name: 'nproc', soft: 512, hard: 512 },
      ],
    };
    const o = withContainer(
      {
        ulimits: [
          { name: 'nofile', soft: 65536, hard: 65536 },
          { name: 'core', soft: 0, hard: 0 },
        ],
      },
      agent,
    );
    expect(o.HostConfig?.Ulimits).toEqual([
      { Name: 'nofile', Soft: 65536, Hard: 65536 },
      { Name: 'nproc', Soft: 512, Hard: 512 },
      { Name: 'core', Soft: 0, Hard: 0 },
    ]);
    expect(withContainer({}, agent).HostConfig?.Ulimits).toEqual([
      { Name: 'nofile', Soft: 1024, Hard: 1024 },
      { Name: 'nproc', Soft: 512, Hard: 512 },
    ]);
    expect(mergeUlimits([], [])).toEqual([]);
  });
});

describe('the bind allowlist', () => {
  const root = mkdtempSync(join(tmpdir(), 'so-allow-'));
  const allowed = join(root, 'allowed');
  mkdirSync(join(allowed, 'site'), { recursive: true });
  symlinkSync('/etc', join(allowed, 'escape'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('refuses every bind when no directory is allowed', () => {
    expect(() => checkHostPath('/srv/site', [])).toThrow(
      'bind of /srv/site is refused: the agent allows host paths only under --allow-host-path directories (none set)',
    );
  });

  it('allows paths inside an allowed directory and the directory itself', () => {
    expect(() => checkHostPath(join(allowed, 'site'), [allowed])).not.toThrow();
    expect(() => checkHostPath(allowed, [allowed])).not.toThrow();
    expect(() => checkHostPath(join(allowed, 'not-yet'), [allowed])).not.toThrow();
  });

  it('refuses .. escapes, siblings with the same prefix, symbolic links out, and relative paths', () => {
    const message = `directories (${allowed})`;
    expect(() => checkHostPath(join(allowed, '..', 'other'), [allowed])).toThrow(message);
    expect(() => checkHostPath(`${allowed}/../other`, [allowed])).toThrow(message);
    expect(() => checkHostPath(`${allowed}-2/x`, [allowed])).toThrow(message);
    expect(() => checkHostPath(join(allowed, 'escape'), [allowed])).toThrow(message);
    expect(() => checkHostPath(join(allowed, 'escape', 'not-there'), [allowed])).toThrow(message);
    expect(() => checkHostPath('site', [allowed])).toThrow(message);
  });

  it('allows the docker socket only when it or a parent is listed', () => {
    expect(() => checkHostPath('/var/run/docker.sock', ['/srv', '/var/lib'])).toThrow('(/srv, /var/lib)');
    expect(() => checkHostPath('/var/run/docker.sock', ['/var/run/docker.sock'])).not.toThrow();
    expect(() => checkHostPath('/var/run/docker.sock', ['/var/run'])).not.toThrow();
    expect(() => checkHostPath('/anything', ['/'])).not.toThrow();
  });
});
