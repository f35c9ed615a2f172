import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentProto, type ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';

interface Link {
  from: string;
  to: string;
  reachable: boolean;
  rtt_ms: number | null;
  checked_at: string;
}

/**
 * An open TCP port that is not a probe listener. `silent` accepts and says nothing; `echo`
 * answers `ping X` with `pong X`, the way anything could imitate the probe protocol's shape.
 */
class Listener {
  connections = 0;
  received = '';
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {}

  static async open(host: string, port: number, mode: 'silent' | 'echo'): Promise<Listener> {
    const server = createServer();
    const listener = new Listener(server);
    server.on('connection', (socket) => {
      listener.connections += 1;
      listener.sockets.add(socket);
      socket.on('close', () => listener.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      socket.on('data', (chunk: Buffer) => {
        listener.received += chunk.toString('latin1');
        const line = /^ping (\S+)\n/m.exec(chunk.toString('latin1'));
        if (mode === 'echo' && line) socket.write(`pong ${line[1]}\n`);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
    return listener;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('connectivity probes go only to the agent that announced them', () => {
  let t: TestApp;
  const agents: AgentProcess[] = [];
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: { HEARTBEAT_INTERVAL: '400ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
    await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
  });
  afterAll(() => t.close());

  async function api(method: 'get' | 'post', path: string, body?: object) {
    const req = t.http[method](path).set('Authorization', await t.adminAuth());
    return body ? req.send(body) : req;
  }

  function agent(token: string, name: string, args: string[] = [], noAddress = false): AgentProcess {
    const a = AgentProcess.start({ server: t.url, token, name, args, noAddress });
    agents.push(a);
    return a;
  }

  async function connected(name: string, want = true): Promise<{ id: string; address: string }> {
    let found: { id: string; name: string; address: string; connected: boolean } | undefined;
    await eventually(async () => {
      const res = await api('get', '/api/v1/orchestrator/workers?limit=200');
      found = (res.body.workers as (typeof found)[]).find((w) => w?.name === name);
      return found?.connected === want;
    }, 20_000);
    return found!;
  }

  async function links(): Promise<Link[]> {
    return (await api('get', '/api/v1/orchestrator/workers/connectivity')).body.links as Link[];
  }

  /** A silent listener on 127.0.0.2 and an echoing one on 127.0.0.1, on the same port. */
  async function listenerPair(): Promise<{ claimed: Listener; own: Listener }> {
    for (let attempt = 0; ; attempt++) {
      const claimed = await Listener.open('127.0.0.2', 0, 'silent');
      try {
        const own = await Listener.open('127.0.0.1', claimed.port, 'echo');
        return { claimed, own };
      } catch (err) {
        await claimed.close();
        if (attempt === 5) throw err;
      }
    }
  }

  /**
   * Speaks for a worker with its real certificate: says hello with `probe_address` and keeps the
   * stream open without answering anything.
   */
  async function handRolledAgent(dataDir: string, workerId: string, probeAddress: string): Promise<void> {
    const proto = loadAgentProto();
    const endpoint = (await api('get', '/api/v1/orchestrator/info')).body.agent_endpoint as string;
    const credentials = grpc.credentials.createSsl(
      readFileSync(join(dataDir, 'ca.pem')),
      readFileSync(join(dataDir, 'key.pem')),
      readFileSync(join(dataDir, 'cert.pem')),
    );
    const client = new proto.AgentGateway(endpoint, credentials) as unknown as grpc.Client & {
      Connect(): grpc.ClientDuplexStream<object, ServerMessage>;
    };
    const stream = client.Connect();
    closers.push(() => {
      stream.cancel();
      client.close();
      return Promise.resolve();
    });
    await new Promise<void>((resolve, reject) => {
      stream.on('data', (m: ServerMessage) => {
        if (m.welcome) resolve();
      });
      stream.on('error', (err: grpc.ServiceError) => {
        if (err.code !== grpc.status.CANCELLED) reject(err);
      });
      stream.write({
        hello: {
          worker_id: workerId,
          version: 'test',
          hostname: 'hand-rolled',
          driver: 'process',
          probe_address: probeAddress,
        },
      });
    });
  }

  it('probes the host the agent connected from at its probe port; another open port reads unreachable, with no error detail', async () => {
    const token = (await api('post', '/api/v1/orchestrator/join-tokens', { pre_approved: true })).body
      .token as string;
    // The hand-rolled agent's identity: enrolled without --address and without a probe listener.
    const enrolled = agent(token, 'node-scan-f', ['--probe-port', 'off'], true);
    const wf = await connected('node-scan-f');
    await enrolled.stop('SIGTERM');
    await connected('node-scan-f', false);

    agent(token, 'node-scan-a');
    agent(token, 'node-scan-b');
    const wa = await connected('node-scan-a');
    const wb = await connected('node-scan-b');

    // The hand-rolled agent claims a probe address on another host of the loopback net.
    const { claimed, own } = await listenerPair();
    closers.push(
      () => claimed.close(),
      () => own.close(),
    );
    await handRolledAgent(enrolled.dataDir, wf.id, `127.0.0.2:${claimed.port}`);
    // Without --address at enrollment, the worker's address is the one it connected from.
    expect((await api('get', `/api/v1/orchestrator/workers/${wf.id}`)).body.address).toBe('127.0.0.1');

    const check = await api('post', '/api/v1/orchestrator/workers/connectivity/check');
    expect(check.status).toBe(202);
    expect(check.body.workers).toBeGreaterThanOrEqual(3);
    const between = (all: Link[], from: string, to: string) =>
      all.find((l) => l.from === from && l.to === to);
    let matrix: Link[] = [];
    await eventually(async () => {
      matrix = await links();
      return (
        between(matrix, wa.id, wf.id) !== undefined &&
        between(matrix, wb.id, wf.id) !== undefined &&
        between(matrix, wa.id, wb.id)?.reachable === true &&
        between(matrix, wb.id, wa.id)?.reachable === true
      );
    }, 20_000);

    // Nobody went to the host the agent claimed; both peers went to the one it connected from, at
    // the port it announced, where something answered that was not the agent.
    expect(claimed.connections).toBe(0);
    expect(own.connections).toBeGreaterThanOrEqual(2);
    expect(own.received).toMatch(/^ping \S+\n/);
    for (const from of [wa.id, wb.id]) {
      const link = between(matrix, from, wf.id)!;
      expect(link).toEqual({
        from,
        to: wf.id,
        reachable: false,
        rtt_ms: null,
        checked_at: expect.any(String) as string,
      });
    }
    // Real peers still measure each other.
    expect(between(matrix, wa.id, wb.id)!.rtt_ms).toBeGreaterThan(0);

    // No socket error detail in the database or the service's log either.
    const rows = await t.app
      .get(DataSource)
      .query<Record<string, unknown>[]>('SELECT * FROM worker_links WHERE to_id = $1', [wf.id]);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows)
      expect(Object.keys(row).sort()).toEqual(['checked_at', 'from_id', 'reachable', 'rtt_ms', 'to_id']);
    const unreachable = t.logs.records().filter((r) => r.msg === 'peers unreachable');
    expect(unreachable.length).toBeGreaterThan(0);
    expect(t.logs.text()).not.toMatch(/ECONNREFUSED|ETIMEDOUT|unexpected answer/);
  });

  it('an address the operator gave at enrollment is probed instead of the one the agent connects from', async () => {
    const token = (await api('post', '/api/v1/orchestrator/join-tokens', { pre_approved: true })).body
      .token as string;
    // The agent connects from 127.0.0.1 but listens for probes only on 127.0.0.3.
    agent(token, 'node-addr-c', ['--address', '127.0.0.3', '--probe-bind', '127.0.0.3']);
    agent(token, 'node-addr-d');
    const wc = await connected('node-addr-c');
    const wd = await connected('node-addr-d');
    expect((await api('get', `/api/v1/orchestrator/workers/${wc.id}`)).body.address).toBe('127.0.0.3');
    await api('post', '/api/v1/orchestrator/workers/connectivity/check');
    await eventually(async () => {
      const all = await links();
      return all.some((l) => l.from === wd.id && l.to === wc.id && l.reachable);
    }, 20_000);
  });
});
