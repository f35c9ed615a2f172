import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver, containerName, networkName } from '../../src/agent/drivers/docker.driver.js';
import type { ApplyContext, HealthCheckSpec, ServiceSpec, StackRef } from '../../src/agent/drivers/driver.js';
import { reconcile } from '../../src/agent/drivers/reconcile.js';
import { HealthChecker, startConditionHooks } from '../../src/agent/health-checker.js';
import { podman, podmanSocket } from '../support/podman.js';
import { containerSpec } from '../support/service-specs.js';

/** A Compose `CMD-SHELL` check as the service sends it. */
const shellCheck = (script: string, over: Partial<HealthCheckSpec> = {}): HealthCheckSpec => ({
  path: '',
  port: 0,
  interval_ms: 500,
  type: 'command',
  test: ['/bin/sh', '-c', script],
  timeout_ms: 2000,
  retries: 3,
  start_period_ms: 10_000,
  start_interval_ms: 250,
  ...over,
});

const needs = (service: string, condition: string) => ({
  service,
  condition,
  required: true,
  restart: false,
});

interface Inspected {
  Created: string;
  State: { Status: string; ExitCode: number; FinishedAt: string; StartedAt: string };
}

async function inspect(name: string): Promise<Inspected> {
  return (JSON.parse(await podman(['container', 'inspect', name])) as Inspected[])[0];
}

async function stackContainers(stackId: string): Promise<string[]> {
  const out = await podman([
    'ps',
    '-a',
    '--filter',
    `label=io.stack-orchestrator.stack-id=${stackId}`,
    '--format',
    '{{.Names}}',
  ]);
  return out.split('\n').filter(Boolean);
}

describe('command health checks and start conditions on the docker driver (podman)', () => {
  let driver: DockerDriver;
  let health: HealthChecker;
  const stacks: StackRef[] = [];

  beforeAll(async () => {
    driver = new DockerDriver({
      socketPath: await podmanSocket(),
      log: pino({ level: 'silent' }),
      stopTimeoutSeconds: 0,
    });
    health = new HealthChecker((stackId, name, argv, timeoutMs) =>
      driver.exec({ id: stackId, name: 'hc' }, name, argv, timeoutMs),
    );
  });

  afterAll(async () => {
    health?.close();
    if (!(driver as DockerDriver | undefined)) return;
    for (const stack of stacks) {
      const left = await stackContainers(stack.id);
      if (left.length > 0) await podman(['rm', '-f', '-t', '0', ...left]);
      await podman(['network', 'rm', '-f', networkName(stack.id)]).catch(() => undefined);
    }
    await driver.close();
  });

  /** Applies `services` as a provision does: conditions honoured, checks live as services come up. */
  async function apply(services: ServiceSpec[]) {
    const stack = { id: randomUUID(), name: `hc-${stacks.length}` };
    stacks.push(stack);
    const checks = new Map<string, HealthCheckSpec>();
    for (const s of services) if (s.health_check) checks.set(s.name, s.health_check);
    const lines: string[] = [];
    const ctx: ApplyContext = {
      log: (line) => lines.push(line),
      signal: AbortSignal.timeout(45_000),
      conditions: startConditionHooks(health, stack.id, checks, new Set(), 100),
    };
    const results = await reconcile(driver, stack, services, ctx);
    return { stack, results, lines };
  }

  it('a CMD-SHELL check gates a service_healthy dependant until the file it tests appears', async () => {
    const db = containerSpec('db', {
      command: ['sh', '-c', 'sleep 2 && touch /tmp/ready && exec sleep 3600'],
      health_check: shellCheck('test -f /tmp/ready'),
    });
    const api = containerSpec('api', { start_conditions: [needs('db', 'service_healthy')] });
    const started = Date.now();
    const { stack, results, lines } = await apply([db, api]);
    expect(results).toEqual([
      { name: 'db', action: 'created', ok: true, error: '' },
      { name: 'api', action: 'created', ok: true, error: '' },
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(lines.indexOf('api: db is healthy')).toBeGreaterThan(-1);
    expect(lines.indexOf('api: db is healthy')).toBeLessThan(
      lines.findIndex((l) => l.startsWith('api: creating')),
    );
    const dbStarted = new Date((await inspect(containerName(stack.id, 'db'))).State.StartedAt).getTime();
    const apiCreated = new Date((await inspect(containerName(stack.id, 'api'))).Created).getTime();
    expect(apiCreated - dbStarted).toBeGreaterThanOrEqual(1800);
    expect(health.verdict(stack.id, 'db')).toBe('healthy');
    expect(health.result(stack.id, 'db')).toMatchObject({
      url: 'exec: /bin/sh -c test -f /tmp/ready',
      status_code: 0,
      ok: true,
      error: '',
    });
  });

  it('a one-shot runs to completion before its service_completed_successfully dependant; exit 3 fails its own', async () => {
    const once = { restart: 'never' as const };
    const migrate = containerSpec('migrate', {
      ...once,
      command: ['sh', '-c', 'sleep 1; echo done > /tmp/x'],
    });
    const app = containerSpec('app', {
      start_conditions: [needs('migrate', 'service_completed_successfully')],
    });
    const bad = containerSpec('bad', { ...once, command: ['sh', '-c', 'exit 3'] });
    const app2 = containerSpec('app2', {
      start_conditions: [needs('bad', 'service_completed_successfully')],
    });
    const { stack, results } = await apply([migrate, app, bad, app2]);
    expect(results).toEqual([
      { name: 'migrate', action: 'created', ok: true, error: '' },
      { name: 'app', action: 'created', ok: true, error: '' },
      { name: 'bad', action: 'created', ok: true, error: '' },
      { name: 'app2', action: 'failed', ok: false, error: 'dependency bad exited with code 3' },
    ]);
    const migrated = await inspect(containerName(stack.id, 'migrate'));
    expect(migrated.State).toMatchObject({ Status: 'exited', ExitCode: 0 });
    const appCreated = new Date((await inspect(containerName(stack.id, 'app'))).Created).getTime();
    expect(appCreated).toBeGreaterThanOrEqual(new Date(migrated.State.FinishedAt).getTime() - 50);
    expect(await stackContainers(stack.id)).not.toContain(containerName(stack.id, 'app2'));
  });

  it('a check that never passes (retries 2) makes its service_healthy dependant fail as unhealthy', async () => {
    const sick = containerSpec('sick', {
      health_check: shellCheck('echo not yet; exit 1', { retries: 2, start_period_ms: 0, interval_ms: 300 }),
    });
    const waiter = containerSpec('waiter', { start_conditions: [needs('sick', 'service_healthy')] });
    const { stack, results } = await apply([sick, waiter]);
    expect(results[1]).toEqual({
      name: 'waiter',
      action: 'failed',
      ok: false,
      error: 'dependency sick is unhealthy',
    });
    expect(health.result(stack.id, 'sick')).toMatchObject({ ok: false, error: 'not yet' });
    expect(await stackContainers(stack.id)).toEqual([containerName(stack.id, 'sick')]);
  });
});
