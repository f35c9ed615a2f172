import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApplyContext, ServiceSpec } from './driver.js';
import { HealthChecker } from '../health-checker.js';
import { ProcessDriver, volumeEnvName } from './process.driver.js';
import { destroyStack, reconcile } from './reconcile.js';

const ctx = (): ApplyContext => ({ signal: new AbortController().signal, log: () => undefined });
const stack = { id: '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40', name: 'unit' };

const spec = (name: string, command: string[], over: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name,
  image: '',
  command,
  env: {},
  ports: [],
  cpu: 0,
  memory_bytes: 0,
  restart: 'never',
  health_check: null,
  digest: `sha256:${name}`,
  ...over,
});

/** Processes whose command line contains `marker` (pgrep exits 1 when there are none). */
function processesWith(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

const until = async (fn: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('process driver', () => {
  let dir: string;
  let driver: ProcessDriver;

  afterEach(async () => {
    await driver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kills what a service left behind when it exits, and stops its whole group', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    // The shell starts a child and exits: the child must not outlive it.
    const marker = `sleep 98${process.pid % 100}7`;
    const [result] = await reconcile(
      driver,
      stack,
      [spec('leaver', ['sh', '-c', `${marker} & exit 1`])],
      ctx(),
    );
    expect(result).toMatchObject({ action: 'created', ok: true });
    await until(() => processesWith(marker).length === 0);
    const [observed] = await driver.observe();
    expect(observed).toMatchObject({ name: 'leaver', running: false, status: 'exited', exitCode: 1 });

    // A running service's children stop with it on destroy.
    const keeper = `sleep 97${process.pid % 100}6`;
    await reconcile(driver, stack, [spec('keeper', ['sh', '-c', `${keeper} & wait`])], ctx());
    await until(() => processesWith(keeper).length >= 1);
    const results = await destroyStack(driver, stack, ctx());
    expect(results.map((r) => r.action)).toEqual(['removed']);
    await until(() => processesWith(keeper).length === 0);
  });

  it('restarts under on-failure and leaves a restart: never service stopped; kept services are untouched', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    await reconcile(
      driver,
      stack,
      [
        spec('flaky', ['sh', '-c', 'sleep 0.2; exit 3'], { restart: 'on-failure' }),
        spec('once', ['sh', '-c', 'exit 0'], { restart: 'on-failure' }),
      ],
      ctx(),
    );
    await new Promise((r) => setTimeout(r, 1500));
    const byName = Object.fromEntries((await driver.observe()).map((o) => [o.name, o]));
    expect(byName.flaky.restarts).toBeGreaterThanOrEqual(1);
    // on-failure: a clean exit is not restarted.
    expect(byName.once).toMatchObject({ running: false, restarts: 0, exitCode: 0 });

    const kept = await reconcile(driver, stack, [], { ...ctx(), keep: new Set(['once']) });
    // The kept service is reported as kept (docs/drivers.md, "What both drivers share").
    expect(kept.map((r) => [r.name, r.action]).sort()).toEqual([
      ['flaky', 'removed'],
      ['once', 'kept'],
    ]);
    expect((await driver.observe()).map((o) => o.name)).toEqual(['once']);
  });

  it('refuses a service that carries files, and starts the others', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    const results = await reconcile(
      driver,
      stack,
      [
        spec('configured', ['sleep', '30'], {
          files: [{ path: '/etc/app.yml', content: 'a: 1\n', mode: 0o644 }],
        }),
        spec('plain', ['sleep', '30']),
      ],
      ctx(),
    );
    expect(results).toEqual([
      {
        name: 'configured',
        action: 'failed',
        ok: false,
        error: 'the process driver does not put files in place; place it on a docker worker',
      },
      { name: 'plain', action: 'created', ok: true, error: '' },
    ]);
    await destroyStack(driver, stack, ctx());
  });

  it('hands each output line to the sink whole, by stream, however the pipe splits it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    const lines: [string, string, string, string][] = [];
    driver = new ProcessDriver(dir, pino({ level: 'silent' }), undefined, (stackId, service, stream, line) =>
      lines.push([stackId, service, stream, line]),
    );
    // A line written in two pieces (a "€" split between its bytes), CRLF, an empty line, a line
    // longer than 4096 characters, stderr beside stdout, and a last line without its end.
    const script = `
      const euro = Buffer.from('€');
      process.stdout.write(Buffer.concat([Buffer.from('half '), euro.subarray(0, 1)]));
      setTimeout(() => {
        process.stdout.write(Buffer.concat([euro.subarray(1), Buffer.from(' whole\\r\\n\\n')]));
        process.stderr.write('to stderr\\n');
        process.stdout.write('x'.repeat(5000) + '\\nlast without end');
      }, 150);`;
    await reconcile(driver, stack, [spec('talker', [process.execPath, '-e', script])], ctx());
    await until(() => lines.some((l) => l[3] === 'last without end'));
    expect(lines.filter((l) => l[2] === 'stdout').map((l) => l[3])).toEqual([
      'half € whole',
      'x'.repeat(4096),
      'x'.repeat(904),
      'last without end',
    ]);
    expect(lines.filter((l) => l[2] === 'stderr').map((l) => l[3])).toEqual(['to stderr']);
    expect(new Set(lines.map((l) => `${l[0]}/${l[1]}`))).toEqual(new Set([`${stack.id}/talker`]));
    expect(driver.tail(stack.id, 'talker')).toContain('half € whole');
  });

  it('runs a command check beside the service, with its environment, healthy once the file appears', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    const flag = join(dir, 'ready');
    const check = {
      path: '',
      port: 0,
      interval_ms: 200,
      type: 'command',
      test: ['/bin/sh', '-c', 'test -f "$FLAG" && echo "in $(pwd)"'],
      timeout_ms: 1000,
      retries: 2,
      start_period_ms: 0,
      start_interval_ms: 200,
    };
    await reconcile(
      driver,
      stack,
      [spec('svc', ['sleep', '30'], { env: { FLAG: flag }, health_check: check })],
      ctx(),
    );
    const health = new HealthChecker((stackId, name, argv, timeoutMs) =>
      driver.exec({ id: stackId, name: 'unit' }, name, argv, timeoutMs),
    );
    try {
      health.set(stack.id, 'svc', check);
      await until(() => health.verdict(stack.id, 'svc') === 'unhealthy');
      expect(health.result(stack.id, 'svc')).toMatchObject({ ok: false, error: 'exit code 1' });
      writeFileSync(flag, '');
      await until(() => health.verdict(stack.id, 'svc') === 'healthy');
      expect(health.result(stack.id, 'svc')).toMatchObject({ ok: true, status_code: 0, error: '' });
      // Its working directory is the service's, and a run past its timeout is killed and fails.
      const ran = await driver.exec(stack, 'svc', ['/bin/sh', '-c', 'pwd'], 1000);
      expect(ran).toEqual({ exitCode: 0, output: `${join(dir, 'services', stack.id)}\n` });
      await expect(driver.exec(stack, 'svc', ['sleep', '5'], 200)).rejects.toThrow('timed out after 200 ms');
      await expect(driver.exec(stack, 'nope', ['true'], 200)).rejects.toThrow('nope is not running');
    } finally {
      health.close();
    }
  });

  it('gives a named volume as a directory in STACK_VOLUME_<NAME>, kept across replace and destroy until delete_volumes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    expect(volumeEnvName('app-data.v2')).toBe('STACK_VOLUME_APP_DATA_V2');
    const volumes = [
      { type: 'volume' as const, source: 'app-data', target: '/data', read_only: false, size_bytes: 0 },
    ];
    const volumeDir = join(dir, 'volumes', stack.id, 'app-data');
    // Writes the directory it was given into it, then a line per start.
    const writer = (digest: string) =>
      spec(
        'writer',
        [
          'sh',
          '-c',
          'echo "$STACK_VOLUME_APP_DATA" > "$STACK_VOLUME_APP_DATA/where"; echo start >> "$STACK_VOLUME_APP_DATA/starts"; exec sleep 30',
        ],
        {
          digest,
          volumes,
        },
      );
    const starts = () =>
      existsSync(join(volumeDir, 'starts')) ? readFileSync(join(volumeDir, 'starts'), 'utf8') : '';

    expect(await reconcile(driver, stack, [writer('sha256:w-1')], ctx())).toMatchObject([
      { action: 'created', ok: true },
    ]);
    await until(() => starts() === 'start\n');
    expect(readFileSync(join(volumeDir, 'where'), 'utf8')).toBe(`${volumeDir}\n`);
    expect(statSync(volumeDir).mode & 0o777).toBe(0o700);

    // A new digest replaces the process; the directory and what is in it stay.
    expect(await reconcile(driver, stack, [writer('sha256:w-2')], ctx())).toMatchObject([
      { action: 'replaced', ok: true },
    ]);
    await until(() => starts() === 'start\nstart\n');

    // A destroy without delete_volumes keeps it; a new deployment finds it again.
    await destroyStack(driver, stack, ctx());
    expect(existsSync(join(dir, 'services', stack.id))).toBe(false);
    expect(starts()).toBe('start\nstart\n');
    await reconcile(driver, stack, [writer('sha256:w-2')], ctx());
    await until(() => starts() === 'start\nstart\nstart\n');

    // With delete_volumes it goes.
    await destroyStack(driver, stack, { ...ctx(), deleteVolumes: true });
    expect(existsSync(join(dir, 'volumes', stack.id))).toBe(false);
  });

  it('refuses binds, tmpfs, anonymous and read-only volumes and container options, but ignores uncapped', async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-process-driver-'));
    driver = new ProcessDriver(dir, pino({ level: 'silent' }));
    const mount = (type: 'volume' | 'bind' | 'tmpfs', source: string, read_only = false) => ({
      volumes: [{ type, source, target: '/data', read_only, size_bytes: 0 }],
    });
    const container = (over: Record<string, unknown>) => ({
      container: {
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
        ...over,
      },
    });
    const results = await reconcile(
      driver,
      stack,
      [
        spec('bind', ['sleep', '30'], mount('bind', '/srv')),
        spec('tmpfs', ['sleep', '30'], mount('tmpfs', '')),
        spec('anon', ['sleep', '30'], mount('volume', '')),
        spec('ro', ['sleep', '30'], mount('volume', 'data', true)),
        spec('user', ['sleep', '30'], container({ user: 'nobody', init: true })),
        spec('uncapped', ['sleep', '30'], container({ uncapped: true })),
      ],
      ctx(),
    );
    expect(results.map((r) => [r.name, r.ok, r.error])).toEqual([
      ['bind', false, 'the process driver mounts nothing: bind mount at /data needs a docker worker'],
      ['tmpfs', false, 'the process driver mounts nothing: tmpfs mount at /data needs a docker worker'],
      ['anon', false, 'the process driver has no anonymous volumes (/data); use a named volume'],
      ['ro', false, 'the process driver cannot make volume data read-only; place it on a docker worker'],
      [
        'user',
        false,
        'the process driver has no container options (user, init); place it on a docker worker',
      ],
      ['uncapped', true, ''],
    ]);
    await destroyStack(driver, stack, ctx());
  });
});
