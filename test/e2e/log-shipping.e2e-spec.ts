/**
 * The agent ships a docker stack's output to its log store: the real docker driver against podman,
 * the real LogShipper, and in place of Loki (whose image cannot be had here) a loopback HTTP
 * receiver that takes Loki's push API in JSON and answers as Loki does (204), or 503 while "down".
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver, networkName } from '../../src/agent/drivers/docker.driver.js';
import type { ApplyContext, ServiceSpec, StackRef } from '../../src/agent/drivers/driver.js';
import { destroyStack, reconcile } from '../../src/agent/drivers/reconcile.js';
import { LogShipper } from '../../src/agent/log-shipper.js';
import { podman, podmanSocket } from '../support/podman.js';
import { containerSpec } from '../support/service-specs.js';

interface Push {
  streams: { stream: Record<string, string>; values: [string, string][] }[];
}

/** Loki's push endpoint as far as the shipper sees it. */
class PushReceiver {
  readonly pushes: Push[] = [];
  down = false;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/loki/api/v1/push' || this.down) {
          res.writeHead(this.down ? 503 : 404).end();
          return;
        }
        expect(req.headers['content-type']).toBe('application/json');
        this.pushes.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Push);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/loki/api/v1/push`;
  }

  /** Every line received per `service/stream`, in the order pushed, with its timestamp. */
  lines(): Map<string, { ns: bigint; line: string }[]> {
    const out = new Map<string, { ns: bigint; line: string }[]>();
    for (const push of this.pushes)
      for (const s of push.streams) {
        const key = `${s.stream.service}/${s.stream.stream}`;
        const list = out.get(key) ?? [];
        list.push(...s.values.map(([ns, line]) => ({ ns: BigInt(ns), line })));
        out.set(key, list);
      }
    return out;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function until<T>(what: string, fn: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = fn();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const talker = (name: string, script: string): ServiceSpec =>
  containerSpec(name, {
    command: ['sh', '-c', `trap 'exit 0' TERM; ${script}; while true; do sleep 1; done`],
    digest: `sha256:${name}-${script.length}`,
  });

describe('log shipping from docker containers to the stack’s log store', () => {
  let driver: DockerDriver;
  let shipper: LogShipper;
  const receiver = new PushReceiver();
  const stack: StackRef = { id: randomUUID(), name: 'chatty' };
  const ctx: ApplyContext = { log: () => undefined, signal: new AbortController().signal };

  beforeAll(async () => {
    driver = new DockerDriver({
      socketPath: await podmanSocket(),
      log: pino({ level: 'silent' }),
      stopTimeoutSeconds: 1,
    });
    shipper = new LogShipper(driver.logSource(), pino({ level: 'silent' }), { pollMs: 200, flushMs: 200 });
    await receiver.start();
  });

  afterAll(async () => {
    await shipper?.close();
    if (driver) await destroyStack(driver, stack, ctx).catch(() => undefined);
    await podman(['network', 'rm', '-f', networkName(stack.id)]).catch(() => undefined);
    await receiver.close();
  });

  it('pushes each service’s stdout and stderr lines, labelled, in order, with their own timestamps', async () => {
    const started = BigInt(Date.now() - 60_000) * 1_000_000n;
    await reconcile(
      driver,
      stack,
      [
        talker('web', 'echo one; echo two >&2; sleep 1; echo "three with spaces  and é"'),
        talker('worker', 'echo hello from worker'),
      ],
      ctx,
    );
    shipper.set(stack, receiver.url);
    const lines = await until(`the lines at the receiver`, () => {
      const got = receiver.lines();
      return got.get('web/stdout')?.length === 2 &&
        got.get('web/stderr')?.length === 1 &&
        got.get('worker/stdout')?.length === 1
        ? got
        : undefined;
    });
    expect(lines.get('web/stdout')!.map((l) => l.line)).toEqual(['one', 'three with spaces  and é']);
    expect(lines.get('web/stderr')!.map((l) => l.line)).toEqual(['two']);
    expect(lines.get('worker/stdout')!.map((l) => l.line)).toEqual(['hello from worker']);
    const [one, three] = lines.get('web/stdout')!;
    expect(one.ns).toBeGreaterThan(started);
    expect(three.ns).toBeGreaterThan(one.ns);
    expect(receiver.pushes[0].streams[0].stream).toMatchObject({ stack: 'chatty', stack_id: stack.id });
    expect(Object.keys(receiver.pushes[0].streams[0].stream).sort()).toEqual([
      'service',
      'stack',
      'stack_id',
      'stream',
    ]);
  });

  it('holds lines while the store is down and delivers them once, including a replaced container’s', async () => {
    receiver.down = true;
    const before = receiver.pushes.length;
    await reconcile(
      driver,
      stack,
      [talker('web', 'echo after replace'), talker('worker', 'echo hello from worker')],
      ctx,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.pushes.length).toBe(before);
    receiver.down = false;
    const lines = await until('the held line', () => {
      const web = receiver.lines().get('web/stdout');
      return web?.some((l) => l.line === 'after replace') ? web : undefined;
    });
    expect(lines.map((l) => l.line)).toEqual(['one', 'three with spaces  and é', 'after replace']);
    // Nothing twice: the unchanged worker was followed on, not again from the start.
    expect(
      receiver
        .lines()
        .get('worker/stdout')!
        .map((l) => l.line),
    ).toEqual(['hello from worker']);
  });

  it('follows a container restarted under the same id on, without sending its earlier lines again', async () => {
    const name = `so-${stack.id.replace(/-/g, '').slice(0, 12)}-worker`;
    await podman(['restart', '-t', '0', name]);
    const lines = await until('the second start’s line', () => {
      const worker = receiver.lines().get('worker/stdout');
      return worker && worker.length >= 2 ? worker : undefined;
    });
    // Let a follow that would send old lines again do so, then look.
    await new Promise((r) => setTimeout(r, 1500));
    expect(
      receiver
        .lines()
        .get('worker/stdout')!
        .map((l) => l.line),
    ).toEqual(['hello from worker', 'hello from worker']);
    expect(lines[1].ns).toBeGreaterThan(lines[0].ns);
  });

  it('stops shipping a stack it is told to forget', async () => {
    shipper.set(stack, null);
    const before = receiver.pushes.length;
    await reconcile(
      driver,
      stack,
      [talker('web', 'echo unseen'), talker('worker', 'echo hello from worker')],
      ctx,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.pushes.length).toBe(before);
  });
});
