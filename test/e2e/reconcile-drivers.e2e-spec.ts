import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver, networkName } from '../../src/agent/drivers/docker.driver.js';
import type { ApplyContext, Driver, ServiceSpec, StackRef } from '../../src/agent/drivers/driver.js';
import { ProcessDriver } from '../../src/agent/drivers/process.driver.js';
import { NOT_REACHED, destroyStack, reconcile } from '../../src/agent/drivers/reconcile.js';
import { eventually } from '../support/app.js';
import { MISSING_IMAGE, TEST_IMAGE, podman, podmanSocket } from '../support/podman.js';
import { HTTP_SERVICE, freePort, httpGet } from '../support/stacks.js';
import { containerSpec } from '../support/service-specs.js';

/**
 * The same reconcile scenarios against both real drivers: the process driver on this machine and
 * the docker driver on podman's Docker Engine API (scripts/podman-setup.sh; PODMAN_SOCKET). What
 * docs/drivers.md says under "What both drivers share" holds for each, word for word the same rows.
 */
interface Harness {
  driver: Driver;
  /** A service that runs until stopped. */
  idle(name: string, version?: number): ServiceSpec;
  /** A service answering GET /version with `version` on 127.0.0.1:<port>. */
  http(name: string, port: number, version: number): ServiceSpec;
  /** A service this driver cannot start, and what its error says. */
  broken(name: string): ServiceSpec;
  brokenError: string;
  close(): Promise<void>;
}

const base = (name: string, version: number): ServiceSpec =>
  containerSpec(name, { image: '', command: [], digest: `sha256:${name}-${version}` });

function processHarness(): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'so-reconcile-'));
  const driver = new ProcessDriver(dir, pino({ level: 'silent' }), process.env.PATH);
  return {
    driver,
    idle: (name, version = 1) => ({ ...base(name, version), command: ['sleep', '3600'] }),
    http: (name, port, version) => ({
      ...base(name, version),
      command: [process.execPath, HTTP_SERVICE],
      env: { PORT: String(port), VERSION: String(version) },
      ports: [{ container: port, host: port, protocol: 'tcp' }],
    }),
    broken: (name) => ({ ...base(name, 1), command: ['/nonexistent/so-reconcile-test'] }),
    brokenError: 'cannot start /nonexistent/so-reconcile-test',
    close: async () => {
      await driver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function dockerHarness(stacks: StackRef[]): Promise<Harness> {
  // sleep and httpd as PID 1 ignore SIGTERM: do not wait the default 10 s on each removal.
  const driver = new DockerDriver({
    socketPath: await podmanSocket(),
    log: pino({ level: 'silent' }),
    stopTimeoutSeconds: 1,
  });
  const serve = 'mkdir -p /www && printf %s "$VERSION" > /www/version && exec httpd -f -p 8080 -h /www';
  return {
    driver,
    idle: (name, version = 1) => ({ ...base(name, version), image: TEST_IMAGE, command: ['sleep', '3600'] }),
    http: (name, port, version) => ({
      ...base(name, version),
      image: TEST_IMAGE,
      command: ['sh', '-c', serve],
      env: { VERSION: String(version) },
      ports: [{ container: 8080, host: port, protocol: 'tcp' }],
    }),
    broken: (name) => ({ ...base(name, 1), image: MISSING_IMAGE, command: ['sleep', '3600'] }),
    brokenError: `image ${MISSING_IMAGE} is not present on this node and could not be pulled`,
    close: async () => {
      // By hand and at once: what is left of failed tests.
      for (const stack of stacks) {
        const left = await podman([
          'ps',
          '-aq',
          '--filter',
          `label=io.stack-orchestrator.stack-id=${stack.id}`,
        ]);
        if (left) await podman(['rm', '-f', '-t', '0', ...left.split('\n')]);
        // The stack's network goes with its last container when the driver removes it, not by hand.
        await podman(['network', 'rm', '-f', networkName(stack.id)]).catch(() => undefined);
      }
      await driver.close();
    },
  };
}

const drivers: [string, (stacks: StackRef[]) => Harness | Promise<Harness>][] = [
  ['process', () => processHarness()],
  ['docker', (stacks) => dockerHarness(stacks)],
];

describe.each(drivers)('reconcile on the %s driver', (_name, make) => {
  let h: Harness;
  const stacks: StackRef[] = [];

  const newStack = (): StackRef => {
    const stack = { id: randomUUID(), name: `reconcile-${stacks.length}` };
    stacks.push(stack);
    return stack;
  };

  /** A context recording the job's lines and progress. */
  const context = (over: Partial<ApplyContext> = {}) => {
    const lines: string[] = [];
    const progress: [number, number][] = [];
    const ctx: ApplyContext = {
      signal: new AbortController().signal,
      log: (line) => lines.push(line),
      progress: (done, total) => progress.push([done, total]),
      ...over,
    };
    return { ctx, lines, progress };
  };

  /** The stack's services on the node: name -> digest, and whether it runs. */
  const onNode = async (stack: StackRef) =>
    Object.fromEntries(
      (await h.driver.observe())
        .filter((o) => o.stackId === stack.id)
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((o) => [o.name, o.digest]),
    );

  const rows = (results: { name: string; action: string; ok: boolean }[]) =>
    results.map((r) => [r.name, r.action, r.ok]);

  beforeAll(async () => {
    h = await make(stacks);
  });

  afterAll(async () => {
    // Unset when beforeAll failed (no podman): its error is the one to see.
    if ((h as Harness | undefined) !== undefined) await h.close();
  });

  it('deploys a fresh stack in the list order, with progress after each service', async () => {
    const stack = newStack();
    const { ctx, progress } = context();
    const results = await reconcile(h.driver, stack, [h.idle('b'), h.idle('a')], ctx);
    expect(results).toEqual([
      { name: 'b', action: 'created', ok: true, error: '' },
      { name: 'a', action: 'created', ok: true, error: '' },
    ]);
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(await onNode(stack)).toEqual({ a: 'sha256:a-1', b: 'sha256:b-1' });
  });

  it('updates: removes first, then replaces the changed, leaves the unchanged and the kept', async () => {
    const stack = newStack();
    const first = [h.idle('changed'), h.idle('same'), h.idle('gone'), h.idle('held')];
    expect((await reconcile(h.driver, stack, first, context().ctx)).every((r) => r.ok)).toBe(true);

    const { ctx, progress } = context({ keep: new Set(['held']) });
    const next = [h.idle('changed', 2), h.idle('same'), h.idle('held', 2), h.idle('new')];
    const results = await reconcile(h.driver, stack, next, ctx);
    expect(rows(results)).toEqual([
      ['gone', 'removed', true],
      ['changed', 'replaced', true],
      ['same', 'unchanged', true],
      ['held', 'kept', true],
      ['new', 'created', true],
    ]);
    expect(progress).toEqual([1, 2, 3, 4, 5].map((done) => [done, 5]));
    // The kept service still runs its old configuration.
    expect(await onNode(stack)).toEqual({
      changed: 'sha256:changed-2',
      held: 'sha256:held-1',
      new: 'sha256:new-1',
      same: 'sha256:same-1',
    });
  });

  it('removes before it creates: a renamed service gets the old one host port', async () => {
    const stack = newStack();
    const port = await freePort();
    await reconcile(h.driver, stack, [h.http('old', port, 1)], context().ctx);
    await eventually(
      async () => JSON.stringify(await httpGet(port, '/version')) === '{"status":200,"text":"1"}',
    );

    const results = await reconcile(h.driver, stack, [h.http('renamed', port, 2)], context().ctx);
    expect(rows(results)).toEqual([
      ['old', 'removed', true],
      ['renamed', 'created', true],
    ]);
    await eventually(
      async () => JSON.stringify(await httpGet(port, '/version')) === '{"status":200,"text":"2"}',
    );
    expect(Object.keys(await onNode(stack))).toEqual(['renamed']);
  });

  it('stops when cancelled mid-way: a cancelled row for each service not reached, nothing more changed', async () => {
    const stack = newStack();
    await reconcile(h.driver, stack, [h.idle('old')], context().ctx);
    const abort = new AbortController();
    const { ctx, progress } = context({
      signal: abort.signal,
      // Cancelled once the removal and the first desired service are done.
      progress: (done, total) => {
        progress.push([done, total]);
        if (done === 2) abort.abort(new Error('cancelled'));
      },
    });
    const results = await reconcile(h.driver, stack, [h.idle('a'), h.idle('b'), h.idle('c')], ctx);
    expect(results).toEqual([
      { name: 'old', action: 'removed', ok: true, error: '' },
      { name: 'a', action: 'created', ok: true, error: '' },
      { name: 'b', action: 'failed', ok: false, error: NOT_REACHED },
      { name: 'c', action: 'failed', ok: false, error: NOT_REACHED },
    ]);
    expect(progress).toEqual([
      [1, 4],
      [2, 4],
    ]);
    expect(await onNode(stack)).toEqual({ a: 'sha256:a-1' });
  });

  it('fails only the service that cannot start, says why, and goes on with the others', async () => {
    const stack = newStack();
    const { ctx, lines, progress } = context();
    const results = await reconcile(h.driver, stack, [h.broken('broken'), h.idle('fine')], ctx);
    expect(rows(results)).toEqual([
      ['broken', 'failed', false],
      ['fine', 'created', true],
    ]);
    expect(results[0].error).toContain(h.brokenError);
    expect(lines).toContain(`broken: failed: ${results[0].error}`);
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(Object.keys(await onNode(stack))).toContain('fine');
  });

  it('destroys every service of the stack, kept ones too, and nothing of another stack', async () => {
    const doomed = newStack();
    const other = newStack();
    await reconcile(h.driver, doomed, [h.idle('a'), h.idle('b')], context().ctx);
    await reconcile(h.driver, other, [h.idle('a')], context().ctx);
    const { ctx, progress } = context({ keep: new Set(['a']) });
    expect(rows(await destroyStack(h.driver, doomed, ctx))).toEqual([
      ['a', 'removed', true],
      ['b', 'removed', true],
    ]);
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(await onNode(doomed)).toEqual({});
    expect(await onNode(other)).toEqual({ a: 'sha256:a-1' });
    expect(await destroyStack(h.driver, doomed, context().ctx)).toEqual([]);
  });
});
