import * as grpc from '@grpc/grpc-js';
import { X509Certificate } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CaRepository } from '../../src/server/agent-gateway/ca.repository.js';
import { CertificatesService } from '../../src/server/agent-gateway/certificates.service.js';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import { loadAgentProto, type ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { foreignClientCertificate } from '../support/pki.js';

interface Worker {
  id: string;
  name: string;
  status: string;
  last_heartbeat: string | null;
  metrics: {
    cpu_percent: number;
    memory_percent: number;
    disk_percent: number;
    containers_running: number;
  } | null;
  connected: boolean;
  labels: Record<string, string>;
}

describe('the agent plane with real agents over mutual TLS', () => {
  let t: TestApp;
  const agents: AgentProcess[] = [];
  let gatewayEndpoint: string;

  beforeAll(async () => {
    // Thresholds at 100 %: machine-wide CPU under a parallel test run may pass 90 % and make a
    // worker degraded, which is right but not what these tests are about (worker-state.spec.ts is).
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '400ms',
        WORKER_CERT_TTL: '6s',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
    gatewayEndpoint = (await api('get', '/api/v1/orchestrator/info')).body.agent_endpoint as string;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
  });
  afterAll(() => t.close());

  async function api(method: 'get' | 'post' | 'delete', path: string, body?: object) {
    const req = t.http[method](path).set('Authorization', await t.adminAuth());
    return body ? req.send(body) : req;
  }

  async function joinToken(body: object = {}): Promise<string> {
    const res = await api('post', '/api/v1/orchestrator/join-tokens', body);
    expect(res.status).toBe(201);
    return res.body.token as string;
  }

  function agent(
    token: string | undefined,
    name: string,
    dataDir?: string,
    args: string[] = [],
  ): AgentProcess {
    const a = AgentProcess.start({ server: t.url, token, name, dataDir, args });
    agents.push(a);
    return a;
  }

  async function workerNamed(name: string): Promise<Worker | undefined> {
    const res = await api('get', '/api/v1/orchestrator/workers?limit=200');
    return (res.body.workers as Worker[]).find((w) => w.name === name);
  }

  /**
   * `reporting` means connected and heartbeating: healthy, or degraded when the machine's CPU is
   * pegged by the test run itself (agents report machine-wide CPU; a busy CI box reaches 100 %).
   */
  async function waitForStatus(name: string, status: string, timeoutMs = 20_000): Promise<Worker> {
    const matches = (s: string | undefined) =>
      status === 'reporting' ? s === 'healthy' || s === 'degraded' : s === status;
    let last: Worker | undefined;
    await eventually(async () => matches((last = await workerNamed(name))?.status), timeoutMs);
    return last!;
  }

  it('join tokens: created once with their secret, listed without it, scoped to workers:admin', async () => {
    const res = await api('post', '/api/v1/orchestrator/join-tokens', { ttl: '2h', labels: { zone: 'a' } });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^sojt_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(res.body.expires_at as string) - Date.now()).toBeGreaterThan(7_100_000);
    expect(res.body.pre_approved).toBe(false);
    const list = await api('get', '/api/v1/orchestrator/join-tokens');
    const listed = (list.body.join_tokens as { id: string }[]).find((j) => j.id === res.body.id);
    expect(listed).toMatchObject({
      pre_approved: false,
      labels: { zone: 'a' },
      revoked_at: null,
      expired: false,
    });
    expect(JSON.stringify(list.body)).not.toContain((res.body.token as string).split('.')[1]);
    const rows = await t.app
      .get(DataSource)
      .query<{ secret_hash: string }[]>('SELECT secret_hash FROM join_tokens');
    expect(JSON.stringify(rows)).not.toContain((res.body.token as string).split('.')[1]);
    const read = `Bearer ${(await t.token(undefined, 'orchestrator:read')).access_token}`;
    await t.http.post('/api/v1/orchestrator/join-tokens').set('Authorization', read).send({}).expect(403);
    await t.http.post('/api/v1/orchestrator/join-tokens').send({}).expect(401);
    for (const bad of [
      { ttl: 'soon' },
      { ttl: '1s' },
      { labels: { 'Bad Key': 'x' } },
      { pre_approved: 'yes' },
      // null is not "left out": each field's check applies to it (it was a 500 for ttl).
      { ttl: null },
      { pre_approved: null },
      { labels: null },
    ]) {
      expect((await api('post', '/api/v1/orchestrator/join-tokens', bad)).status, JSON.stringify(bad)).toBe(
        422,
      );
    }
    // A body that is JSON but not an object: no token with every default.
    const before = (await api('get', '/api/v1/orchestrator/join-tokens')).body.join_tokens.length;
    for (const text of ['null', '[]', '1', '"s"', 'true']) {
      const res = await t.http
        .post('/api/v1/orchestrator/join-tokens')
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', 'application/json')
        .send(text);
      expect(res.status, text).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'body', message: 'the body must be a JSON object' }]);
    }
    expect((await api('get', '/api/v1/orchestrator/join-tokens')).body.join_tokens).toHaveLength(before);
  });

  it('enrolls, waits as pending, is approved, then connects and turns healthy with metrics', async () => {
    const a = agent(await joinToken({ labels: { zone: 'b' } }), 'node-approve', undefined, [
      '--label',
      'rack=r1',
    ]);
    const pending = await waitForStatus('node-approve', 'pending');
    expect(pending).toMatchObject({
      last_heartbeat: null,
      metrics: null,
      connected: false,
      labels: { zone: 'b', rack: 'r1' },
    });
    const filtered = await api('get', '/api/v1/orchestrator/workers?status=pending');
    expect((filtered.body.workers as Worker[]).every((w) => w.status === 'pending')).toBe(true);
    expect((filtered.body.workers as Worker[]).map((w) => w.id)).toContain(pending.id);

    const approved = await api('post', `/api/v1/orchestrator/workers/${pending.id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.approved_at).not.toBeNull();
    const healthy = await waitForStatus('node-approve', 'reporting');
    expect(healthy.connected).toBe(true);
    expect(Date.now() - Date.parse(healthy.last_heartbeat!)).toBeLessThan(5000);
    expect(healthy.metrics!.memory_percent).toBeGreaterThan(0);
    expect(healthy.metrics!.disk_percent).toBeGreaterThan(0);
    expect(healthy.metrics!.containers_running).toBe(0);
    expect(a.logged('connected')).toBe(true);

    // The agent keeps its key to itself.
    expect(statSync(join(a.dataDir, 'key.pem')).mode & 0o777).toBe(0o600);
    // A second approval is a conflict; worker details answer by id; metrics follow reality.
    expect((await api('post', `/api/v1/orchestrator/workers/${pending.id}/approve`)).status).toBe(409);
    expect((await api('get', `/api/v1/orchestrator/workers/${pending.id}`)).body.id).toBe(pending.id);
    const metrics = (await t.http.get('/metrics')).text;
    expect(metrics).toMatch(/^stack_workers_connected 1$/m);
    // The healthy gauge follows reality: it equals the number of workers the API calls healthy.
    await eventually(async () => {
      const listed = (await api('get', '/api/v1/orchestrator/workers?limit=200')).body.workers as Worker[];
      const gauge = /^stack_workers_healthy (\d+)$/m.exec((await t.http.get('/metrics')).text)?.[1];
      return Number(gauge) === listed.filter((w) => w.status === 'healthy').length;
    });
    // The workers check follows the next count of states (every half heartbeat, at most a second).
    await eventually(async () => {
      const checks = (await t.http.get('/api/v1/orchestrator/health')).body.checks as Record<string, string>;
      return checks.grpc === 'ok' && checks.workers === 'ok';
    });
    const audit = await api('get', '/api/v1/orchestrator/audit?action=worker.approved');
    expect((audit.body.events as { target: string }[]).map((e) => e.target)).toContain(pending.id);
  });

  it('a pre-approved join token connects at once, and the CA fingerprint can be pinned', async () => {
    const fingerprint = (await api('get', '/api/v1/orchestrator/info')).body.ca_fingerprint as string;
    agent(await joinToken({ pre_approved: true }), 'node-pre', undefined, ['--ca-fingerprint', fingerprint]);
    const w = await waitForStatus('node-pre', 'reporting');
    expect(w.connected).toBe(true);
  });

  it('takes the join token from a file, the environment or the command line; only the last shows in ps', async () => {
    for (const via of ['file', 'env', 'arg'] as const) {
      const token = await joinToken({ pre_approved: true });
      const a = AgentProcess.start({ server: t.url, token, name: `node-token-${via}`, tokenVia: via });
      agents.push(a);
      await waitForStatus(`node-token-${via}`, 'reporting');
      const commandLine = readFileSync(`/proc/${a.child.pid}/cmdline`, 'utf8');
      expect(commandLine.includes(token), via).toBe(via === 'arg');
    }
  });

  it('an agent pinned to another CA fingerprint refuses to continue', async () => {
    const a = agent(await joinToken({ pre_approved: true }), 'node-pin', undefined, [
      '--ca-fingerprint',
      'ab'.repeat(32),
    ]);
    expect(await a.exited).toBe(1);
    expect(a.records().some((r) => r.level === 'FATAL' && String(r.err).includes('does not match'))).toBe(
      true,
    );
  });

  it('refuses expired, revoked and malformed join tokens', async () => {
    const expired = await joinToken();
    await t.app
      .get(DataSource)
      .query(`UPDATE join_tokens SET expires_at = now() - interval '1 minute' WHERE id = $1`, [
        expired.slice(5, 21),
      ]);
    const revoked = await joinToken();
    expect((await api('delete', `/api/v1/orchestrator/join-tokens/${revoked.slice(5, 21)}`)).status).toBe(
      204,
    );
    for (const token of [expired, revoked, `${revoked.slice(0, -3)}xyz`, 'sojt_nonsense']) {
      const a = agent(token, `node-bad-${agents.length}`);
      expect(await a.exited).toBe(1);
      expect(
        a.records().some((r) => r.level === 'FATAL' && String(r.err).includes('enrollment refused')),
      ).toBe(true);
    }
  });

  describe('the agent port', () => {
    const proto = loadAgentProto();

    function connect(
      credentials: grpc.ChannelCredentials,
      workerId: string,
    ): Promise<{ welcomed: boolean; error?: grpc.ServiceError }> {
      const client = new proto.AgentGateway(gatewayEndpoint, credentials) as unknown as grpc.Client & {
        Connect(): grpc.ClientDuplexStream<object, ServerMessage>;
      };
      const stream = client.Connect();
      return new Promise((resolve) => {
        stream.on('data', (m: ServerMessage) => {
          if (m.welcome) {
            stream.end();
            client.close();
            resolve({ welcomed: true });
          }
        });
        stream.on('error', (error: grpc.ServiceError) => {
          client.close();
          resolve({ welcomed: false, error });
        });
        stream.write({
          hello: {
            worker_id: workerId,
            version: 'test',
            hostname: 'x',
            driver: 'process',
            probe_address: '',
          },
        });
      });
    }

    it('keeps no channelz bookkeeping per connection (memory per agent, docs/benchmarks.md)', async () => {
      // grpc-js registers every server, listener and connection with channelz unless told not to;
      // the agent port's server must not be among them.
      const port = gatewayEndpoint.split(':').at(-1);
      const servers = await new Promise<{ listen_socket: { name: string }[] }[]>((resolve, reject) =>
        grpc
          .getChannelzHandlers()
          .GetServers(
            { request: { start_server_id: 0, max_results: 1000 } } as never,
            ((err: Error | null, res: { server: { listen_socket: { name: string }[] }[] }) =>
              err ? reject(err) : resolve(res.server)) as never,
          ),
      );
      const listeners = servers.flatMap((s) => s.listen_socket.map((l) => l.name));
      expect(listeners.filter((name) => name.endsWith(`:${port}`))).toEqual([]);
    });

    async function approvedAgentFiles(name: string): Promise<{ dir: string; worker: Worker }> {
      const a = agent(await joinToken({ pre_approved: true }), name);
      const worker = await waitForStatus(name, 'reporting');
      return { dir: a.dataDir, worker };
    }

    const files = (dir: string) => ({
      ca: readFileSync(join(dir, 'ca.pem')),
      key: readFileSync(join(dir, 'key.pem')),
      cert: readFileSync(join(dir, 'cert.pem')),
    });

    it('refuses a client without a certificate, and one whose certificate another CA signed', async () => {
      const { dir, worker } = await approvedAgentFiles('node-tls');
      const { ca } = files(dir);
      const none = await connect(grpc.credentials.createSsl(ca), worker.id);
      expect(none.welcomed).toBe(false);
      const impostor = await foreignClientCertificate(worker.id);
      const foreign = await connect(
        grpc.credentials.createSsl(ca, Buffer.from(impostor.keyPem), Buffer.from(impostor.certPem)),
        worker.id,
      );
      expect(foreign.welcomed).toBe(false);
      expect(foreign.error?.code).toBe(grpc.status.UNAVAILABLE);
    });

    it('binds the certificate to its worker: hello for another worker is refused', async () => {
      const { dir } = await approvedAgentFiles('node-bind');
      const { ca, key, cert } = files(dir);
      const other = await connect(
        grpc.credentials.createSsl(ca, key, cert),
        '00000000-0000-4000-8000-000000000000',
      );
      expect(other.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    });

    it('answers grpc.health.v1 for a client with a valid certificate', async () => {
      const { dir } = await approvedAgentFiles('node-health');
      const { ca, key, cert } = files(dir);
      const { HealthClient } = await import('../support/health-client.js');
      const status = await new HealthClient(gatewayEndpoint, grpc.credentials.createSsl(ca, key, cert)).check(
        'stack.agent.v1.AgentGateway',
      );
      expect(status).toBe('SERVING');
    });

    it('limits certificate renewals per worker', async () => {
      const a = agent(await joinToken({ pre_approved: true }), 'node-renewals');
      await waitForStatus('node-renewals', 'reporting');
      await a.stop('SIGKILL');
      const { ca, key, cert } = files(a.dataDir);
      const client = new proto.AgentGateway(
        gatewayEndpoint,
        grpc.credentials.createSsl(ca, key, cert),
      ) as unknown as grpc.Client & {
        RenewCertificate(
          req: { csr_pem: string },
          cb: (err: grpc.ServiceError | null, res?: { certificate_pem: string }) => void,
        ): void;
      };
      const { worker_id: workerId } = JSON.parse(readFileSync(join(a.dataDir, 'identity.json'), 'utf8')) as {
        worker_id: string;
      };
      const { csrPem } = await newKeyAndCsr(workerId);
      const codes: grpc.status[] = [];
      // WORKER_CERT_TTL is 6 s: five renewals per 4 s. Twelve quick calls span at most two windows.
      for (let i = 0; i < 12; i++) {
        codes.push(
          await new Promise<grpc.status>((resolve) =>
            client.RenewCertificate({ csr_pem: csrPem }, (err, res) =>
              resolve(err ? err.code : res?.certificate_pem ? grpc.status.OK : grpc.status.UNKNOWN),
            ),
          ),
        );
      }
      client.close();
      expect(codes[0]).toBe(grpc.status.OK);
      expect(codes.filter((c) => c === grpc.status.OK).length).toBeLessThanOrEqual(10);
      expect(codes.filter((c) => c !== grpc.status.OK)).toContain(grpc.status.RESOURCE_EXHAUSTED);
    });

    it('a certificate just issued connects without a lookup; a renewal-style fresh check reads it', async () => {
      const lookups = vi.spyOn(t.app.get(CaRepository), 'findValid');
      try {
        const { keyPem, csrPem } = await newKeyAndCsr('node-fresh-cert');
        const res = await t.http.post('/api/v1/orchestrator/workers/enroll').send({
          token: await joinToken({ pre_approved: true }),
          csr: csrPem,
          hostname: 'node-fresh-cert.test',
          address: '127.0.0.1',
          os: 'linux',
          arch: 'x64',
          version: 'test',
          driver: 'process',
          name: 'node-fresh-cert',
        });
        expect(res.status).toBe(201);
        const credentials = grpc.credentials.createSsl(
          Buffer.from(res.body.ca_certificate as string),
          Buffer.from(keyPem),
          Buffer.from(res.body.certificate as string),
        );
        expect(await connect(credentials, res.body.worker_id as string)).toEqual({ welcomed: true });
        expect(lookups).not.toHaveBeenCalled();
        const serial = new X509Certificate(res.body.certificate as string).serialNumber;
        const certificates = t.app.get(CertificatesService);
        expect(await certificates.isValid(serial, res.body.worker_id as string, { fresh: true })).toBe(true);
        expect(lookups).toHaveBeenCalledTimes(1);
      } finally {
        lookups.mockRestore();
      }
    });

    it('deleting a worker revokes its certificate and closes its stream; the agent enrolls again as pending', async () => {
      const a = agent(await joinToken({ pre_approved: true }), 'node-delete');
      const before = await waitForStatus('node-delete', 'reporting');
      const saved = mkdtempSync(join(tmpdir(), 'so-saved-'));
      cpSync(a.dataDir, saved, { recursive: true });
      expect((await api('delete', `/api/v1/orchestrator/workers/${before.id}`)).status).toBe(204);
      expect((await api('get', `/api/v1/orchestrator/workers/${before.id}`)).status).toBe(404);
      const again = await waitForStatus('node-delete', 'pending');
      expect(again.id).not.toBe(before.id);
      expect(a.logged('the service revoked this identity; enrolling again')).toBe(true);
      // The old certificate is refused when a connection opens, every time; once refused, a serial
      // costs no more database queries.
      const { ca, key, cert } = files(saved);
      const lookups = vi.spyOn(t.app.get(CaRepository), 'findValid');
      try {
        for (let i = 0; i < 3; i++) {
          const reuse = await connect(grpc.credentials.createSsl(ca, key, cert), before.id);
          expect(reuse.welcomed).toBe(false);
          expect(reuse.error?.code).toBe(grpc.status.UNAUTHENTICATED);
          expect(reuse.error?.details).toContain('identity_revoked');
        }
        expect(lookups.mock.calls.length).toBeLessThanOrEqual(1);
      } finally {
        lookups.mockRestore();
      }
      const audit = await api('get', '/api/v1/orchestrator/audit?action=worker.deleted');
      expect((audit.body.events as { target: string }[]).map((e) => e.target)).toContain(before.id);
    });
  });

  it('SIGSTOP makes a worker unreachable after 3 missed heartbeats; SIGCONT brings it back', async () => {
    const a = agent(await joinToken({ pre_approved: true }), 'node-stop');
    await waitForStatus('node-stop', 'reporting');
    a.signal('SIGSTOP');
    const gone = await waitForStatus('node-stop', 'unreachable', 10_000);
    expect(Date.now() - Date.parse(gone.last_heartbeat!)).toBeGreaterThanOrEqual(1200);
    a.signal('SIGCONT');
    await waitForStatus('node-stop', 'reporting', 10_000);
    const transitions = (t.logs.records() as { worker_id?: string; from?: string; to?: string }[]).filter(
      (r) => r.worker_id === gone.id && r.to,
    );
    const path = transitions.map((r) => `${r.from}->${r.to}`);
    expect(path.some((p) => /^(healthy|degraded)->unreachable$/.test(p))).toBe(true);
    expect(path.some((p) => /^unreachable->(healthy|degraded)$/.test(p))).toBe(true);
  });

  it('renews its certificate at two thirds of a short lifetime and stays connected', async () => {
    const a = agent(await joinToken({ pre_approved: true }), 'node-renew');
    const w = await waitForStatus('node-renew', 'reporting');
    const first = readFileSync(join(a.dataDir, 'cert.pem'), 'utf8');
    await eventually(() => a.logged('certificate renewed'), 15_000);
    expect(readFileSync(join(a.dataDir, 'cert.pem'), 'utf8')).not.toBe(first);
    const certs = await t.app
      .get(DataSource)
      .query<{ n: string }[]>('SELECT count(*) AS n FROM worker_certificates WHERE worker_id = $1', [w.id]);
    expect(Number(certs[0].n)).toBeGreaterThanOrEqual(2);
    // Past the first certificate's expiry (6 s), the worker is still healthy on a renewed one.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const now = await waitForStatus('node-renew', 'reporting');
    expect(now.connected).toBe(true);
  });

  it('two agents probe each other: the connectivity matrix with round-trip times, and a silent peer', async () => {
    const token = await joinToken({ pre_approved: true });
    agent(token, 'node-link-a');
    const b = agent(token, 'node-link-b');
    const wa = await waitForStatus('node-link-a', 'reporting');
    const wb = await waitForStatus('node-link-b', 'reporting');
    const check = await api('post', '/api/v1/orchestrator/workers/connectivity/check');
    expect(check.status).toBe(202);
    expect(check.body.workers).toBeGreaterThanOrEqual(2);
    type Link = {
      from: string;
      to: string;
      reachable: boolean;
      rtt_ms: number | null;
      checked_at: string;
    };
    const linkBetween = async (from: string, to: string): Promise<Link | undefined> => {
      const res = await api('get', '/api/v1/orchestrator/workers/connectivity');
      return (res.body.links as Link[]).find((l) => l.from === from && l.to === to);
    };
    await eventually(
      async () =>
        (await linkBetween(wa.id, wb.id))?.reachable === true &&
        (await linkBetween(wb.id, wa.id))?.reachable === true,
    );
    const matrix = await api('get', '/api/v1/orchestrator/workers/connectivity');
    expect(matrix.body.workers).toEqual(expect.arrayContaining([wa.id, wb.id]));
    const ab = (await linkBetween(wa.id, wb.id))!;
    expect(ab.rtt_ms).toBeGreaterThan(0);
    expect(ab.rtt_ms).toBeLessThan(1000);
    expect(Date.now() - Date.parse(ab.checked_at)).toBeLessThan(10_000);

    // A stopped peer still holds its connection but answers no probe: a's next check says so.
    b.signal('SIGSTOP');
    const before = ab.checked_at;
    // Ask for a round at each look: on a loaded machine one round can come back late.
    await eventually(
      async () => {
        await api('post', '/api/v1/orchestrator/workers/connectivity/check');
        await new Promise((resolve) => setTimeout(resolve, 2500));
        const link = await linkBetween(wa.id, wb.id);
        return link !== undefined && link.checked_at !== before && link.reachable === false;
      },
      40_000,
      0,
    );
    // Unreachable, and nothing about why: no socket error is passed on.
    const silent = (await linkBetween(wa.id, wb.id))!;
    expect(silent.rtt_ms).toBeNull();
    expect(silent).not.toHaveProperty('error');
    b.signal('SIGCONT');
    const read = `Bearer ${(await t.token(undefined, 'orchestrator:read')).access_token}`;
    await t.http
      .post('/api/v1/orchestrator/workers/connectivity/check')
      .set('Authorization', read)
      .expect(403);
  });

  it('the agent stops cleanly on SIGTERM, and the service notices the stream end', async () => {
    const a = agent(await joinToken({ pre_approved: true }), 'node-term');
    const w = await waitForStatus('node-term', 'reporting');
    expect(await a.stop('SIGTERM')).toBe(0);
    expect(a.logged('stopped')).toBe(true);
    await eventually(
      async () => (await api('get', `/api/v1/orchestrator/workers/${w.id}`)).body.connected === false,
    );
  });

  it('pages through workers with a cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api(
        'get',
        `/api/v1/orchestrator/workers?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect((res.body.workers as unknown[]).length).toBeLessThanOrEqual(2);
      seen.push(...(res.body.workers as Worker[]).map((w) => w.id));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    const all = await api('get', '/api/v1/orchestrator/workers?limit=200');
    expect(seen).toEqual((all.body.workers as Worker[]).map((w) => w.id));
    expect(seen.length).toBeGreaterThan(4);
  });

  it('validates worker queries', async () => {
    expect((await api('get', '/api/v1/orchestrator/workers?status=bogus')).status).toBe(422);
    expect((await api('get', '/api/v1/orchestrator/workers/not-a-uuid')).status).toBe(404);
    expect(
      (await api('get', '/api/v1/orchestrator/workers/00000000-0000-4000-8000-000000000000')).status,
    ).toBe(404);
    expect(
      (await api('post', '/api/v1/orchestrator/workers/00000000-0000-4000-8000-000000000000/approve')).status,
    ).toBe(404);
    const enroll = await t.http.post('/api/v1/orchestrator/workers/enroll').send({ token: 'x' });
    expect(enroll.status).toBe(422);
  });
});
