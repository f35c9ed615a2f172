import { describe, expect, it } from 'vitest';
import type { ApplyContext, Driver, EnsureAction, ServiceSpec, StackRef } from './driver.js';
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
