import { describe, expect, it } from 'vitest';
import type {
  ApplyContext,
  Driver,
  EnsureAction,
  HealthWait,
  ServiceSpec,
  ServiceStatus,
  StackRef,
  StartConditionHooks,
} from './driver.js';
import { NOT_REACHED, VolumesNotRemovedError, destroyStack, reconcile } from './reconcile.js';

const stack: StackRef = { id: '0d9c6a4e-2b1f-4c3a-8e7d-5f6a7b8c9d0e', name: 'unit' };

const spec = (name: string, digest = `sha256:${name}`): ServiceSpec => ({
  name,
  image: '',
  command: ['true'],
  env: {},
  ports: [],
  cpu: 0,
  memory_bytes: 0,
  restart: 'never',
  health_check: null,
  digest,
});

/**
 * A driver that keeps "services" as digests in a map and records each call: a test double of the
 * driver interface for the loop's own rules (the drivers themselves are tested against the loop in
 * test/e2e/reconcile-drivers.e2e-spec.ts).
 */
class FakeDriver implements Driver<string> {
  readonly name = 'process' as const;
  readonly calls: string[] = [];
  readonly running = new Map<string, string>();
  failing = new Set<string>();
  /** Called after each ensure or remove, e.g. to cancel the job mid-way. */
  after: (name: string) => void = () => undefined;
  unreachable = false;
  volumesFail = false;

  list(): Promise<Map<string, string>> {
    if (this.unreachable) return Promise.reject(new Error('runtime unreachable'));
    return Promise.resolve(new Map(this.running));
  }

  ensure(
    _stack: StackRef,
    s: ServiceSpec,
    found: string | undefined,
    ctx: { replace: boolean },
  ): Promise<EnsureAction> {
    this.calls.push(`ensure ${s.name}${ctx.replace ? ' (replace)' : ''}`);
    try {
      if (this.failing.has(s.name)) return Promise.reject(new Error(`${s.name} would not start`));
      this.running.set(s.name, s.digest);
      if (found === undefined) return Promise.resolve('created');
      return Promise.resolve(found === s.digest && !ctx.replace ? 'unchanged' : 'replaced');
    } finally {
      this.after(s.name);
    }
  }

  remove(_stack: StackRef, name: string): Promise<void> {
    this.calls.push(`remove ${name}`);
    this.running.delete(name);
    this.after(name);
    return this.failing.has(name) ? Promise.reject(new Error(`${name} would not stop`)) : Promise.resolve();
  }

  removeVolumes(): Promise<void> {
    this.calls.push('remove volumes');
    return this.volumesFail ? Promise.reject(new Error('volume in use')) : Promise.resolve();
  }

  observe() {
    return Promise.resolve([]);
  }

  /** What `status` says of each service (a one-shot's exit); absent: not there. */
  readonly statuses = new Map<string, ServiceStatus[]>();

  status(_stack: StackRef, name: string): Promise<ServiceStatus | null> {
    this.calls.push(`status ${name}`);
    const list = this.statuses.get(name);
    // Each call takes the next state; the last one stays.
    return Promise.resolve((list && list.length > 1 ? list.shift() : list?.[0]) ?? null);
  }

  close() {
    return Promise.resolve();
  }
}

function context(over: Partial<ApplyContext> = {}) {
  const lines: string[] = [];
  const progress: [number, number][] = [];
  const abort = new AbortController();
  const ctx: ApplyContext = {
    signal: abort.signal,
    log: (line) => lines.push(line),
    progress: (done, total) => progress.push([done, total]),
    ...over,
  };
  return { ctx, lines, progress, abort };
}

/** Start condition hooks whose health verdicts the test sets; records what was ensured and waited for. */
function hooks(verdicts: Record<string, HealthWait | Promise<HealthWait>> = {}) {
  const seen: string[] = [];
  const conditions: StartConditionHooks = {
    pollMs: 5,
    ensured: (name, action) => seen.push(`ensured ${name} ${action}`),
    waitHealthy: (name) => {
      seen.push(`wait ${name}`);
      return Promise.resolve(verdicts[name] ?? 'none');
    },
  };
  return { conditions, seen };
}

const dependsOn = (
  service: string,
  condition: string,
  over: { required?: boolean; restart?: boolean } = {},
) => ({ service, condition, required: over.required ?? true, restart: over.restart ?? false });

const exited = (code: number): ServiceStatus => ({ status: 'exited', running: false, exitCode: code });
const running: ServiceStatus = { status: 'running', running: true, exitCode: null };

const rows = (results: { name: string; action: string; ok: boolean }[]) =>
  results.map((r) => [r.name, r.action, r.ok]);

describe('reconcile', () => {
  it('removes what is no longer desired first, in name order, then ensures the list in its order', async () => {
    const driver = new FakeDriver();
    driver.running.set('zeta', 'sha256:zeta').set('api', 'sha256:api-0').set('alpha', 'sha256:alpha');
    driver.running.set('web', 'sha256:web');
    const { ctx, progress } = context();
    const results = await reconcile(driver, stack, [spec('web'), spec('api'), spec('db')], ctx);
    expect(driver.calls).toEqual(['remove alpha', 'remove zeta', 'ensure web', 'ensure api', 'ensure db']);
    expect(rows(results)).toEqual([
      ['alpha', 'removed', true],
      ['zeta', 'removed', true],
      ['web', 'unchanged', true],
      ['api', 'replaced', true],
      ['db', 'created', true],
    ]);
    expect(progress).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ]);
  });

  it('reports kept services, desired or not, without touching them, and passes replace on', async () => {
    const driver = new FakeDriver();
    driver.running.set('old', 'sha256:old').set('web', 'sha256:web').set('side', 'sha256:side');
    const { ctx, progress } = context({ keep: new Set(['old', 'side']), replace: new Set(['web']) });
    const results = await reconcile(driver, stack, [spec('web'), spec('side', 'sha256:side-2')], ctx);
    expect(driver.calls).toEqual(['ensure web (replace)']);
    expect(rows(results)).toEqual([
      ['old', 'kept', true],
      ['web', 'replaced', true],
      ['side', 'kept', true],
    ]);
    expect(progress.map(([done]) => done)).toEqual([1, 2, 3]);
    expect(driver.running.get('side')).toBe('sha256:side');
  });

  it('fails only the step that fails, with its error in the row and the log, and goes on', async () => {
    const driver = new FakeDriver();
    driver.running.set('gone', 'sha256:gone');
    driver.failing = new Set(['gone', 'api']);
    const { ctx, lines, progress } = context();
    const results = await reconcile(driver, stack, [spec('api'), spec('web')], ctx);
    expect(results).toEqual([
      { name: 'gone', action: 'failed', ok: false, error: 'gone would not stop' },
      { name: 'api', action: 'failed', ok: false, error: 'api would not start' },
      { name: 'web', action: 'created', ok: true, error: '' },
    ]);
    expect(lines).toEqual(['gone: failed: gone would not stop', 'api: failed: api would not start']);
    expect(progress).toHaveLength(3);
  });

  it('stops at a cancellation: every step not taken gets a cancelled row and no progress', async () => {
    const driver = new FakeDriver();
    driver.running.set('old', 'sha256:old');
    const { ctx, progress, abort } = context({ keep: new Set(['c']) });
    driver.after = (name) => {
      if (name === 'a') abort.abort(new Error('cancelled'));
    };
    const results = await reconcile(driver, stack, [spec('a'), spec('b'), spec('c'), spec('d')], ctx);
    expect(driver.calls).toEqual(['remove old', 'ensure a']);
    expect(results).toEqual([
      { name: 'old', action: 'removed', ok: true, error: '' },
      { name: 'a', action: 'created', ok: true, error: '' },
      { name: 'b', action: 'failed', ok: false, error: NOT_REACHED },
      // A kept service is left alone either way.
      { name: 'c', action: 'kept', ok: true, error: '' },
      { name: 'd', action: 'failed', ok: false, error: NOT_REACHED },
    ]);
    expect(progress).toEqual([
      [1, 5],
      [2, 5],
      [4, 5],
    ]);
  });

  it('throws when the node cannot be listed, before changing anything', async () => {
    const driver = new FakeDriver();
    driver.unreachable = true;
    await expect(reconcile(driver, stack, [spec('web')], context().ctx)).rejects.toThrow(
      'runtime unreachable',
    );
    expect(driver.calls).toEqual([]);
  });

  it('destroys every service of the stack, kept or not; an empty stack gives no rows', async () => {
    const driver = new FakeDriver();
    driver.running.set('b', 'sha256:b').set('a', 'sha256:a');
    const { ctx, progress } = context({ keep: new Set(['a']) });
    expect(rows(await destroyStack(driver, stack, ctx))).toEqual([
      ['a', 'removed', true],
      ['b', 'removed', true],
    ]);
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(await destroyStack(driver, stack, ctx)).toEqual([]);
  });

  describe('start conditions', () => {
    it('service_healthy: the dependant is ensured only after its dependency is healthy', async () => {
      const driver = new FakeDriver();
      let healthy!: (verdict: HealthWait) => void;
      const { conditions, seen } = hooks({ db: new Promise((resolve) => (healthy = resolve)) });
      const { ctx, lines } = context({ conditions });
      const api = { ...spec('api'), start_conditions: [dependsOn('db', 'service_healthy')] };
      const done = reconcile(driver, stack, [spec('db'), api], ctx);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(driver.calls).toEqual(['ensure db']);
      healthy('healthy');
      expect(rows(await done)).toEqual([
        ['db', 'created', true],
        ['api', 'created', true],
      ]);
      expect(driver.calls).toEqual(['ensure db', 'ensure api']);
      expect(seen).toEqual(['ensured db created', 'wait db', 'ensured api created']);
      expect(lines).toContain('api: db is healthy');
    });

    it('service_healthy: an unhealthy dependency fails the dependant; later services go on', async () => {
      const driver = new FakeDriver();
      const { conditions } = hooks({ db: 'unhealthy' });
      const { ctx, lines } = context({ conditions });
      const api = { ...spec('api'), start_conditions: [dependsOn('db', 'service_healthy')] };
      const results = await reconcile(driver, stack, [spec('db'), api, spec('web')], ctx);
      expect(results).toEqual([
        { name: 'db', action: 'created', ok: true, error: '' },
        { name: 'api', action: 'failed', ok: false, error: 'dependency db is unhealthy' },
        { name: 'web', action: 'created', ok: true, error: '' },
      ]);
      expect(driver.calls).toEqual(['ensure db', 'ensure web']);
      expect(lines).toContain('api: failed: dependency db is unhealthy');
    });

    it('service_healthy on a dependency without a check counts as started, and says so', async () => {
      const driver = new FakeDriver();
      const { conditions } = hooks();
      const { ctx, lines } = context({ conditions });
      const api = { ...spec('api'), start_conditions: [dependsOn('db', 'service_healthy')] };
      expect(rows(await reconcile(driver, stack, [spec('db'), api], ctx))).toEqual([
        ['db', 'created', true],
        ['api', 'created', true],
      ]);
      expect(lines).toContain('api: db has no health check; counted as started');
    });

    it('a cancellation while waiting leaves the dependant not reached', async () => {
      const driver = new FakeDriver();
      const { ctx, abort } = context();
      ctx.conditions = {
        waitHealthy: (_name, signal) =>
          new Promise((resolve) => signal.addEventListener('abort', () => resolve('cancelled'))),
      };
      const api = { ...spec('api'), start_conditions: [dependsOn('db', 'service_healthy')] };
      const done = reconcile(driver, stack, [spec('db'), api, spec('web')], ctx);
      await new Promise((resolve) => setTimeout(resolve, 10));
      abort.abort(new Error('cancelled'));
      expect(await done).toEqual([
        { name: 'db', action: 'created', ok: true, error: '' },
        { name: 'api', action: 'failed', ok: false, error: NOT_REACHED },
        { name: 'web', action: 'failed', ok: false, error: NOT_REACHED },
      ]);
      expect(driver.calls).toEqual(['ensure db']);
    });

    it('service_completed_successfully: waits for the one-shot to exit 0', async () => {
      const driver = new FakeDriver();
      driver.statuses.set('migrate', [running, running, exited(0)]);
      const { conditions } = hooks();
      const { ctx, lines } = context({ conditions });
      const api = {
        ...spec('api'),
        start_conditions: [dependsOn('migrate', 'service_completed_successfully')],
      };
      expect(rows(await reconcile(driver, stack, [spec('migrate'), api], ctx))).toEqual([
        ['migrate', 'created', true],
        ['api', 'created', true],
      ]);
      expect(driver.calls).toEqual([
        'ensure migrate',
        'status migrate',
        'status migrate',
        'status migrate',
        'ensure api',
      ]);
      expect(lines).toContain('api: migrate completed successfully');
    });

    it('service_completed_successfully: another exit code fails the dependant with it', async () => {
      const driver = new FakeDriver();
      driver.statuses.set('migrate', [running, exited(3)]);
      const { conditions } = hooks();
      const { ctx } = context({ conditions });
      const api = {
        ...spec('api'),
        start_conditions: [dependsOn('migrate', 'service_completed_successfully')],
      };
      expect((await reconcile(driver, stack, [spec('migrate'), api], ctx))[1]).toEqual({
        name: 'api',
        action: 'failed',
        ok: false,
        error: 'dependency migrate exited with code 3',
      });
      expect(driver.calls).not.toContain('ensure api');
    });

    it('a required dependency that failed to apply fails the dependant, whatever the condition', async () => {
      const driver = new FakeDriver();
      driver.failing = new Set(['db']);
      const { conditions } = hooks();
      const { ctx } = context({ conditions });
      const api = { ...spec('api'), start_conditions: [dependsOn('db', 'service_started')] };
      expect(await reconcile(driver, stack, [spec('db'), api], ctx)).toEqual([
        { name: 'db', action: 'failed', ok: false, error: 'db would not start' },
        { name: 'api', action: 'failed', ok: false, error: 'dependency db failed' },
      ]);
    });

    it('required: false: a failed or unmet dependency does not fail the dependant', async () => {
      const driver = new FakeDriver();
      driver.failing = new Set(['cache']);
      driver.statuses.set('seed', [exited(1)]);
      const { conditions } = hooks({ db: 'unhealthy' });
      const { ctx, lines } = context({ conditions });
      const api = {
        ...spec('api'),
        start_conditions: [
          dependsOn('db', 'service_healthy', { required: false }),
          dependsOn('cache', 'service_started', { required: false }),
          dependsOn('seed', 'service_completed_successfully', { required: false }),
        ],
      };
      const results = await reconcile(driver, stack, [spec('db'), spec('cache'), spec('seed'), api], ctx);
      expect(results[3]).toEqual({ name: 'api', action: 'created', ok: true, error: '' });
      expect(lines).toEqual(
        expect.arrayContaining([
          'api: dependency db is unhealthy; not required, starting anyway',
          'api: dependency cache failed; not required, starting anyway',
          'api: dependency seed exited with code 1; not required, starting anyway',
        ]),
      );
    });

    it('restart: true replaces the dependant when its dependency was replaced or created, not when unchanged', async () => {
      const driver = new FakeDriver();
      driver.running.set('db', 'sha256:db-0').set('api', 'sha256:api').set('web', 'sha256:web');
      const { conditions, seen } = hooks();
      const { ctx, lines } = context({ conditions });
      const api = {
        ...spec('api'),
        start_conditions: [dependsOn('db', 'service_started', { restart: true })],
      };
      const web = { ...spec('web'), start_conditions: [dependsOn('db', 'service_started')] };
      const results = await reconcile(driver, stack, [spec('db'), api, web], ctx);
      expect(rows(results)).toEqual([
        ['db', 'replaced', true],
        ['api', 'replaced', true],
        ['web', 'unchanged', true],
      ]);
      expect(driver.calls).toEqual(['ensure db', 'ensure api (replace)', 'ensure web']);
      expect(lines).toContain('api: db was replaced; replacing it too');
      expect(seen).toContain('ensured api replaced');
      // Next time db is unchanged: api is left alone.
      driver.calls.length = 0;
      await reconcile(driver, stack, [spec('db'), api, web], context({ conditions }).ctx);
      expect(driver.calls).toEqual(['ensure db', 'ensure api', 'ensure web']);
    });

    it('without condition hooks (a restore) nothing is waited for', async () => {
      const driver = new FakeDriver();
      driver.statuses.set('migrate', [exited(3)]);
      const { ctx } = context();
      const api = {
        ...spec('api'),
        start_conditions: [dependsOn('migrate', 'service_completed_successfully')],
      };
      expect(rows(await reconcile(driver, stack, [spec('migrate'), api], ctx))).toEqual([
        ['migrate', 'created', true],
        ['api', 'created', true],
      ]);
      expect(driver.calls).toEqual(['ensure migrate', 'ensure api']);
    });
  });

  it('keeps the volumes on a destroy unless asked, then removes them after the services', async () => {
    const driver = new FakeDriver();
    driver.running.set('a', 'sha256:a');
    await destroyStack(driver, stack, context().ctx);
    expect(driver.calls).toEqual(['remove a']);
    driver.running.set('a', 'sha256:a');
    driver.calls.length = 0;
    expect(rows(await destroyStack(driver, stack, context({ deleteVolumes: true }).ctx))).toEqual([
      ['a', 'removed', true],
    ]);
    expect(driver.calls).toEqual(['remove a', 'remove volumes']);
  });

  it('keeps the volumes when a service could not be removed, and throws with the rows when they fail', async () => {
    const driver = new FakeDriver();
    driver.running.set('a', 'sha256:a');
    driver.failing = new Set(['a']);
    const { ctx, lines } = context({ deleteVolumes: true });
    await destroyStack(driver, stack, ctx);
    expect(driver.calls).toEqual(['remove a']);
    expect(lines).toContain('volumes kept: not every service was removed');

    driver.failing = new Set();
    driver.volumesFail = true;
    driver.running.set('a', 'sha256:a');
    const failed = await destroyStack(driver, stack, context({ deleteVolumes: true }).ctx).catch(
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(VolumesNotRemovedError);
    expect((failed as VolumesNotRemovedError).message).toBe('volumes: volume in use');
    expect(rows((failed as VolumesNotRemovedError).results)).toEqual([['a', 'removed', true]]);
  });
});
