import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import type { DebugBundleManifest } from '../../src/contracts/api/debug.js';
import type { TableFacts } from '../../src/server/debug/debug.repository.js';
import { Leases } from '../../src/server/common/leases.js';
import { SecretBox } from '../../src/server/common/secret-box.js';
import { VARIABLES } from '../../src/server/config/variables.js';
import { ADMIN, eventually, startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase } from '../support/database.js';
import { testDb } from '../support/env.js';
import { CLI, requireBuilt, stackctl } from '../support/stackctl.js';
import { orchestrator } from '../support/stacks.js';
import { serviceSigningKey } from '../support/tokens.js';

const BUNDLE = '/api/v1/orchestrator/debug/bundle';
const ENTRIES = [
  'manifest.json',
  'logs/service.jsonl',
  'config.json',
  'workers.json',
  'jobs.json',
  'metrics.txt',
  'system.json',
];
const FILE_NAME = /^attachment; filename="(debug-bundle-\d{8}T\d{6}Z\.tar\.gz)"$/;
const DB_PASSWORD = 'SomePass123';
const HOUR = 3_600_000;

/** The fields of system.json the test reads. */
interface SystemJson {
  replica: string;
  uptime_seconds: number;
  node: { version: string };
  os: { platform: string; release: string; load_average: Record<string, number> };
  memory: { rss_bytes: number; heap_used_bytes: number };
  event_loop_delay_ms: { p50: number; p99: number; max: number };
  open_handles: { total: number; by_type: Record<string, number> };
  database: {
    embedded: boolean;
    size_bytes: number;
    server_version: string;
    xid_age: number;
    tables: TableFacts[];
    pool: { max: number | null; total: number };
  };
  service: { health: { checks: { database: string } } };
}

interface Download {
  status: number;
  headers: Headers;
  file: string;
}

/** GET the bundle over real HTTP and write the body to a file as it arrives. */
async function download(t: TestApp, auth: string | undefined, dir: string): Promise<Download> {
  const res = await fetch(`${t.url}${BUNDLE}`, { headers: auth ? { authorization: auth } : {} });
  const file = join(dir, `download-${randomBytes(4).toString('hex')}`);
  await pipeline(Readable.fromWeb(res.body as ReadableStream<Uint8Array>), createWriteStream(file));
  return { status: res.status, headers: res.headers, file };
}

/** Lists and extracts an archive with the system tar; the entry names in archive order. */
function untar(file: string, into: string): string[] {
  mkdirSync(into, { recursive: true });
  const names = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n');
  execFileSync('tar', ['-xzf', file, '-C', into]);
  return names;
}

const readJson = <T>(dir: string, name: string): T => JSON.parse(readFileSync(join(dir, name), 'utf8')) as T;

/** A log record as the service writes it. */
const record = (at: number, msg: string): string =>
  `${JSON.stringify({ level: 'INFO', time: new Date(at).toISOString(), pid: 1, msg, component: 'test' })}\n`;

describe('debug bundle', () => {
  let t: TestApp;
  let dir: string;
  const encryptionKey = `bundle-test-key-${randomBytes(16).toString('hex')}`;
  const stackSecret = `stack-literal-${randomBytes(8).toString('hex')}`;
  /** Every secret that must appear nowhere in a bundle. */
  const secrets = new Map<string, string>();
  const workerIds: string[] = [];
  let newestJobId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-bundle-'));
    const db = await createTestDatabase();
    const env: Record<string, string> = { ENCRYPTION_KEY: encryptionKey };
    if (db.databaseUrl !== undefined) {
      // Trust authentication takes any password: the service gets one it must never show.
      const url = new URL(db.databaseUrl);
      url.password = DB_PASSWORD;
      env.DATABASE_URL = url.toString();
      secrets.set('database password', DB_PASSWORD);
    }
    // Logs rotated before this start: one record older than the window, one inside it.
    mkdirSync(join(db.dataDir, 'logs'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(db.dataDir, 'logs', 'service.0.jsonl'),
      record(Date.now() - 30 * HOUR, 'older than a day') + record(Date.now() - 2 * HOUR, 'two hours ago'),
    );
    t = await startTestApp({ db, env });
    const api = orchestrator(t);
    secrets.set('bootstrap client secret', ADMIN.secret);
    secrets.set('ENCRYPTION_KEY', encryptionKey);
    secrets.set('stack environment literal', stackSecret);

    // A refresh-token grant: both the spent and the new refresh token are secrets.
    const pair = await t.token();
    const refreshed = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'refresh_token', refresh_token: pair.refresh_token })
      .expect(200);
    secrets.set('refresh token', pair.refresh_token);
    secrets.set('second refresh token', refreshed.body.refresh_token as string);
    secrets.set('access token', pair.access_token);

    // Two workers enrolled with a join token (no agent runs: their rows are what the bundle reads).
    const joinToken = await api.post('/join-tokens', { pre_approved: true, labels: { zone: 'lab' } });
    expect(joinToken.status).toBe(201);
    const token = joinToken.body.token as string;
    secrets.set('join token', token);
    secrets.set('join token secret', token.split('.')[1]);
    for (const name of ['bundle-a', 'bundle-b']) {
      const { csrPem } = await newKeyAndCsr(name);
      const enrolled = await t.http.post('/api/v1/orchestrator/workers/enroll').send({
        token,
        csr: csrPem,
        hostname: name,
        os: 'linux',
        arch: 'x64',
        version: '1',
        driver: 'process',
        name,
      });
      expect(enrolled.status, enrolled.text).toBe(201);
      secrets.set(`enrollment secret ${name}`, enrolled.body.enrollment_secret as string);
      workerIds.push(enrolled.body.worker_id as string);
    }
    const database = t.app.get(DataSource);
    // What a connectivity round stores: a probes b.
    await database.query(
      `INSERT INTO worker_links (from_id, to_id, reachable, rtt_ms, checked_at) VALUES ($1, $2, true, 1.5, now())`,
      workerIds,
    );

    // Private keys: the CA's and the token signing key, as PEM bodies.
    const ca = await database.query<{ private_key_enc: string }[]>(
      `SELECT private_key_enc FROM certificate_authorities WHERE name = 'agents'`,
    );
    const caPem = t.app.get(SecretBox).decrypt(ca[0].private_key_enc, 'ca:agents');
    secrets.set('CA key', pemBody(caPem));
    const signing = await serviceSigningKey(t.app);
    secrets.set('signing key', pemBody(signing.key.export({ type: 'pkcs8', format: 'pem' }).toString()));

    // A stack whose deploy job stays queued (no agent connected); its payload holds a literal value.
    const stack = await api.yaml(
      'post',
      '/stacks',
      `name: bundled\nstackkit: basement-kit\nvariant: default\nservices:\n  web:\n    command: ["/bin/true"]\n    env:\n      API_KEY: "${stackSecret}"\n`,
    );
    expect(stack.status, stack.text).toBe(201);
    const deploy = await api.post(`/stacks/${stack.body.id as string}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    newestJobId = deploy.body.id as string;
    // Its output, as agents' job events write it: more lines than the bundle keeps.
    await database.query(
      `INSERT INTO job_logs (job_id, time, line)
       SELECT $1, now() - (25 - i) * interval '1 second', 'output line ' || lpad(i::text, 2, '0')
         FROM generate_series(1, 25) AS i`,
      [newestJobId],
    );
    // History of two owners: more jobs than the bundle takes, all older than the deploy above.
    await database.query(
      `INSERT INTO jobs (id, owner, type, stack_id, stack_name, revision, status, progress, attempts,
                         max_attempts, payload, results, timeout_ms, created_at, updated_at, finished_at, created_by)
       SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'default' ELSE 'tenant-a' END, 'provision',
              gen_random_uuid(), 'history-' || i, 1, 'succeeded', 100, 1, 3,
              jsonb_build_object('secret', $1::text), '[]'::jsonb, 600000,
              now() - i * interval '1 minute', now(), now() - i * interval '1 minute', 'test'
         FROM generate_series(1, 1050) AS i`,
      [stackSecret],
    );
    // A runtime setting stored in the database.
    await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .send({ log_level: 'debug' })
      .expect(200);
  });

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  let bundleDir: string;
  let manifest: DebugBundleManifest;
  let fileName: string;

  it('streams a tar.gz the system tar opens, with every entry in order', async () => {
    const res = await download(t, await t.adminAuth(), dir);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    const disposition = FILE_NAME.exec(res.headers.get('content-disposition') ?? '');
    expect(disposition, res.headers.get('content-disposition') ?? '').not.toBeNull();
    fileName = disposition![1];
    expect(res.headers.get('cache-control')).toBe('no-store');
    bundleDir = join(dir, 'first');
    expect(untar(res.file, bundleDir)).toEqual(ENTRIES);
    manifest = readJson<DebugBundleManifest>(bundleDir, 'manifest.json');
  });

  it('manifest.json: version, time, this replica, and every entry with its exact size and digest', () => {
    const holder = t.app.get(Leases).holder;
    expect(manifest.bundle_version).toBe(1);
    expect(manifest.file_name).toBe(fileName);
    const stamp = manifest.created_at.replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');
    expect(fileName).toBe(`debug-bundle-${stamp}.tar.gz`);
    expect(Date.now() - Date.parse(manifest.created_at)).toBeLessThan(5 * 60_000);
    expect(manifest.replica.id).toBe(holder);
    expect(manifest.logs.replica).toBe(holder);
    expect(manifest.other_replicas.map((r) => r.id)).not.toContain(holder);
    expect(manifest.entries.map((e) => e.name)).toEqual(ENTRIES.slice(1));
    for (const entry of manifest.entries) {
      const bytes = readFileSync(join(bundleDir, entry.name));
      expect(entry.size, entry.name).toBe(bytes.length);
      expect(entry.sha256, entry.name).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(entry.description.length).toBeGreaterThan(10);
    }
  });

  it("logs/service.jsonl: this replica's JSON lines of the last 24 hours, oldest first", () => {
    const lines = readFileSync(join(bundleDir, 'logs/service.jsonl'), 'utf8').split('\n').filter(Boolean);
    const records = lines.map((l) => JSON.parse(l) as { time: string; msg: string; level: string });
    const created = Date.parse(manifest.created_at);
    for (const r of records) expect(created - Date.parse(r.time)).toBeLessThanOrEqual(24 * HOUR);
    const times = records.map((r) => Date.parse(r.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const messages = records.map((r) => r.msg);
    expect(messages).toContain('two hours ago');
    expect(messages).not.toContain('older than a day');
    // Written while the test set things up: the settings change and its audit record.
    expect(messages).toContain('log level changed');
    expect(messages).toContain('audit settings.changed success');
    expect(manifest.logs.cut.older_than_window.lines).toBe(1);
    expect(manifest.logs).toMatchObject({ truncated: false, lines: records.length });
    expect(manifest.logs.cap_bytes).toBe(50_000_000);
    expect(manifest.logs.files.map((f) => f.name)).toContain('service.0.jsonl');
  });

  it('config.json: every setting with its value and source, secrets redacted', () => {
    const config = readJson<{ settings: { name: string; value: string | null; source: string }[] }>(
      bundleDir,
      'config.json',
    );
    const byName = new Map(config.settings.map((s) => [s.name, s]));
    for (const name of Object.keys(VARIABLES)) expect(byName.has(name), name).toBe(true);
    expect(byName.get('ENCRYPTION_KEY')).toMatchObject({ value: '[REDACTED]', source: 'environment' });
    expect(byName.get('BOOTSTRAP_CLIENT_SECRET')).toMatchObject({
      value: '[REDACTED]',
      source: 'environment',
    });
    expect(byName.get('BOOTSTRAP_CLIENT_ID')).toMatchObject({ value: ADMIN.clientId, source: 'environment' });
    expect(byName.get('PORT')).toMatchObject({ value: '0', source: 'environment' });
    expect(byName.get('JOB_TIMEOUT')).toMatchObject({ value: '10m', source: 'default' });
    expect(byName.get('TUNNEL_SSH_HOST')).toMatchObject({ value: null, source: 'unset' });
    expect(byName.get('log_level')).toMatchObject({ value: 'debug', source: 'stored' });
    if (testDb() === 'postgres') {
      const url = t.env.DATABASE_URL.replace(`:${DB_PASSWORD}@`, ':[REDACTED]@');
      expect(byName.get('DATABASE_URL')).toMatchObject({ value: url, source: 'environment' });
    } else {
      expect(byName.get('DATABASE_URL')).toMatchObject({ value: null, source: 'unset' });
    }
  });

  it('workers.json: every worker with status, connection, heartbeat, metrics and connectivity', () => {
    const workers = readJson<{
      count: number;
      workers: {
        id: string;
        owner: string;
        name: string;
        status: string;
        connected: boolean;
        last_heartbeat: string | null;
        metrics: unknown;
        connectivity: { to: string; reachable: boolean; rtt_ms: number | null }[];
      }[];
    }>(bundleDir, 'workers.json');
    expect(workers.count).toBe(2);
    expect(workers.workers.map((w) => w.id)).toEqual(workerIds);
    const [a, b] = workers.workers;
    expect(a).toMatchObject({ name: 'bundle-a', owner: 'default', connected: false, last_heartbeat: null });
    expect(a).toHaveProperty('status');
    expect(a).toHaveProperty('metrics');
    expect(a.connectivity).toEqual([expect.objectContaining({ to: b.id, reachable: true, rtt_ms: 1.5 })]);
    expect(b.connectivity).toEqual([]);
  });

  it('jobs.json: the 1,000 newest of every owner, each with its last 20 log lines, no payload', () => {
    const jobs = readJson<{
      total_jobs: number;
      limit: number;
      count: number;
      jobs: {
        id: string;
        owner: string;
        status: string;
        created_at: string;
        log_lines_total: number;
        log_tail: { line: string }[];
      }[];
    }>(bundleDir, 'jobs.json');
    expect(jobs.total_jobs).toBe(1051);
    expect(jobs.jobs).toHaveLength(1000);
    expect(jobs.count).toBe(1000);
    const created = jobs.jobs.map((j) => Date.parse(j.created_at));
    expect(created).toEqual([...created].sort((x, y) => y - x));
    expect(new Set(jobs.jobs.map((j) => j.owner))).toEqual(new Set(['default', 'tenant-a']));
    const newest = jobs.jobs[0];
    expect(newest).toMatchObject({ id: newestJobId, status: 'queued', log_lines_total: 25 });
    expect(newest.log_tail.map((l) => l.line)).toEqual(
      Array.from({ length: 20 }, (_, i) => `output line ${String(i + 6).padStart(2, '0')}`),
    );
    expect(newest).not.toHaveProperty('payload');
    expect(manifest.cuts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ entry: 'jobs.json', reason: 'limit', items: 51 }),
        expect.objectContaining({ entry: 'jobs.json', reason: 'log_tail', items: 1, lines: 5 }),
      ]),
    );
    expect(manifest.entries.find((e) => e.name === 'jobs.json')?.truncated).toBe(true);
  });

  it('metrics.txt: a /metrics snapshot of this replica', () => {
    const metrics = readFileSync(join(bundleDir, 'metrics.txt'), 'utf8');
    expect(metrics).toMatch(/^# HELP /m);
    expect(metrics).toMatch(/^# TYPE process_cpu_user_seconds_total counter$/m);
    expect(metrics).toMatch(/^stack_api_requests_total\{/m);
  });

  it('system.json: versions, memory, load, event-loop delay, handles, database, replica', () => {
    const system = readJson<SystemJson>(bundleDir, 'system.json');
    expect(system.replica).toBe(t.app.get(Leases).holder);
    expect(system.node.version).toBe(process.version);
    expect(system.os.platform).toBe(process.platform);
    expect(typeof system.os.release).toBe('string');
    expect(system.os.load_average).toHaveProperty('1m');
    expect(system.memory.rss_bytes).toBeGreaterThan(0);
    expect(system.memory.heap_used_bytes).toBeGreaterThan(0);
    expect(system.event_loop_delay_ms.max).toBeGreaterThan(0);
    expect(system.event_loop_delay_ms.p99).toBeGreaterThanOrEqual(system.event_loop_delay_ms.p50);
    expect(system.open_handles.total).toBeGreaterThan(0);
    expect(system.open_handles.by_type).toHaveProperty('TCPServerWrap');
    expect(system.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(system.database.embedded).toBe(testDb() === 'pglite');
    expect(system.database.size_bytes).toBeGreaterThan(0);
    expect(system.database.server_version).toMatch(/^\d+/);
    expect(system.database.pool.total).toBeGreaterThanOrEqual(1);
    // What vacuum and analyze have done, table by table (the embedded database's are the service's).
    expect(system.database.xid_age).toBeGreaterThan(0);
    const tables = new Map(system.database.tables.map((table) => [table.name, table]));
    expect([...tables.keys()]).toEqual(expect.arrayContaining(['jobs', 'oauth_clients', 'workers']));
    expect(tables.get('oauth_clients')!.size_bytes).toBeGreaterThan(0);
    for (const table of tables.values()) {
      expect(table.xid_age).toBeGreaterThanOrEqual(0);
      expect(table.dead_rows).toBeGreaterThanOrEqual(0);
      expect(table.live_rows).toBeGreaterThanOrEqual(0);
      for (const at of [table.last_vacuum, table.last_analyze]) {
        if (at !== null) expect(Number.isNaN(Date.parse(at))).toBe(false);
      }
    }
    expect(system.database.pool.max).toBe(testDb() === 'pglite' ? 1 : 10);
    expect(system.service.health.checks.database).toBe('ok');
  });

  it('no secret appears in any entry', () => {
    expect(secrets.size).toBeGreaterThanOrEqual(testDb() === 'postgres' ? 13 : 12);
    for (const name of ENTRIES) {
      const text = readFileSync(join(bundleDir, name), 'utf8');
      for (const [what, secret] of secrets) expect(text.includes(secret), `${what} in ${name}`).toBe(false);
      expect(text, name).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE REQUEST/);
    }
  });

  it('is audited: who made which bundle', async () => {
    const res = await t.http
      .get('/api/v1/orchestrator/audit?action=debug.bundle_created')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    const events = res.body.events as { target: string; actor: string; outcome: string }[];
    expect(events).toEqual([
      expect.objectContaining({ target: fileName, actor: ADMIN.clientId, outcome: 'success' }),
    ]);
  });

  it('401 without a token; 403 without admin, and for the admin of another owner', async () => {
    const none = await t.http.get(BUNDLE);
    expect(none.status).toBe(401);
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
    const clients = [
      { name: 'reader', scopes: ['orchestrator:read', 'orchestrator:write', 'workers:admin'] },
      { name: 'tenant admin', scopes: ['admin'], owner: 'tenant-a' },
    ];
    for (const body of clients) {
      const created = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send(body)
        .expect(201);
      const token = await t.token({ clientId: created.body.client_id, secret: created.body.client_secret });
      const res = await t.http
        .get('/v1/orchestrator/debug/bundle')
        .set('Authorization', `Bearer ${token.access_token}`);
      expect(res.status, body.name).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
  });

  it('one at a time per replica: a second request while one streams is a 429 with Retry-After', async () => {
    // Enough log bytes that gzip cannot shrink them below what the sockets buffer, so the first
    // download stays open while its reader reads nothing.
    const big = join(t.db.dataDir, 'logs', 'service.999999.jsonl');
    const noise = (i: number) => record(Date.now(), `${i} ${randomBytes(1500).toString('base64')}`);
    writeFileSync(big, Array.from({ length: 12_000 }, (_, i) => noise(i)).join(''));
    const auth = await t.adminAuth();
    let first: ClientRequest | undefined;
    try {
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        first = get(`${t.url}${BUNDLE}`, { headers: { authorization: auth } }, resolve);
        first.once('error', reject);
      });
      expect(response.statusCode).toBe(200);
      // The body is not read: the stream, and with it the replica's one slot, stays busy.
      const second = await t.http.get(BUNDLE).set('Authorization', auth);
      expect(second.status).toBe(429);
      expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(second.headers['retry-after']).toBe('10');
      expect(second.body.code).toBe('rate_limited');
    } finally {
      first?.destroy();
      rmSync(big, { force: true });
    }
    // The first client went away: the slot is free again and the spool is gone.
    await eventually(
      async () => (await t.http.get(BUNDLE).set('Authorization', auth)).status === 200,
      15_000,
    );
    await eventually(() => readdirSync(join(t.db.dataDir, 'debug-bundles')).length === 0, 5000);
  });

  describe('stackctl debug bundle', () => {
    beforeAll(() => requireBuilt([CLI]));
    const credentials = () => ({
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    });

    it('-o FILE writes the archive there and prints its path and size', async () => {
      const out = join(dir, 'from-cli.tar.gz');
      const run = await stackctl(['debug', 'bundle', '-o', out], credentials(), {
        secrets: [...secrets.values()],
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const size = statSync(out).size;
      expect(run.stdout.trim()).toBe(`Wrote ${out} (${size} bytes).`);
      expect(untar(out, join(dir, 'from-cli'))).toEqual(ENTRIES);
      const fromCli = readJson<DebugBundleManifest>(join(dir, 'from-cli'), 'manifest.json');
      expect(fromCli.replica.id).toBe(t.app.get(Leases).holder);
    });

    it("without -o, the server's file name in the current directory; --json prints path and size", async () => {
      const cwd = mkdtempSync(join(dir, 'cwd-'));
      const run = await stackctl(['debug', 'bundle', '--json'], { ...credentials() }, { cwd });
      expect(run.code, run.stderr).toBe(0);
      const printed = JSON.parse(run.stdout) as { path: string; size: number; file_name: string };
      expect(printed.file_name).toMatch(/^debug-bundle-\d{8}T\d{6}Z\.tar\.gz$/);
      expect(printed.path).toBe(join(cwd, printed.file_name));
      expect(statSync(printed.path).size).toBe(printed.size);
      expect(untar(printed.path, join(cwd, 'x'))).toEqual(ENTRIES);
    });

    it('is in --help; a stray argument or an empty -o is a usage error', async () => {
      const help = await stackctl(['--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^ {2}debug bundle \[-o FILE\] /m);
      expect(help.stdout).toMatch(/^ {2}-o, --output FILE /m);
      for (const args of [
        ['debug', 'bundle', 'extra'],
        ['debug', 'bundle', '-o', ''],
        ['debug', 'bundle', '--wait'],
      ]) {
        const run = await stackctl(args, credentials());
        expect(run.code, args.join(' ')).toBe(2);
        expect(run.stderr).toContain("Run 'stackctl --help' for usage.");
      }
    });

    it('refuses to overwrite an existing file, and a failed download leaves no file behind', async () => {
      const existing = join(dir, 'exists.tar.gz');
      writeFileSync(existing, 'keep me');
      const run = await stackctl(['debug', 'bundle', '-o', existing], credentials());
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/exists/);
      expect(readFileSync(existing, 'utf8')).toBe('keep me');

      const denied = join(dir, 'denied.tar.gz');
      const wrong = await stackctl(['debug', 'bundle', '-o', denied], {
        ...credentials(),
        STACKCTL_CLIENT_SECRET: 'not-the-secret-0123456789',
      });
      expect(wrong.code).toBe(1);
      expect(() => statSync(denied)).toThrow();
    });
  });
});

describe('debug bundle: the logs cap', () => {
  let t: TestApp;
  let dir: string;
  /** Every marker line has the same length, so the cap holds a known number of them. */
  const marker = (i: number, at: number) => record(at, `marker ${String(i).padStart(4, '0')}`);
  const lineBytes = Buffer.byteLength(marker(0, Date.now()));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'so-bundle-cap-'));
    t = await startTestApp({ env: { DEBUG_BUNDLE_LOG_MAX_BYTES: String(Math.floor(lineBytes * 10.5)) } });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the newest lines that fit and says in the manifest what was cut', async () => {
    // The newest file (the highest number) holds 200 markers; the service's own file is older.
    const now = Date.now();
    writeFileSync(
      join(t.db.dataDir, 'logs', 'service.999999.jsonl'),
      Array.from({ length: 200 }, (_, i) => marker(i, now - (200 - i) * 10)).join(''),
    );
    const res = await download(t, await t.adminAuth(), dir);
    expect(res.status).toBe(200);
    const out = join(dir, 'bundle');
    expect(untar(res.file, out)).toEqual(ENTRIES);
    const kept = readFileSync(join(out, 'logs/service.jsonl'), 'utf8');
    expect(kept).toBe(Array.from({ length: 10 }, (_, i) => marker(190 + i, now - (10 - i) * 10)).join(''));
    const manifest = readJson<DebugBundleManifest>(out, 'manifest.json');
    expect(manifest.logs).toMatchObject({ truncated: true, lines: 10, bytes: 10 * lineBytes });
    expect(manifest.logs.cap_bytes).toBe(Math.floor(lineBytes * 10.5));
    // The 190 older markers went; the service's own, older file was not even read.
    expect(manifest.logs.cut.size_cap).toEqual({ lines: 190, bytes: 190 * lineBytes });
    const ownFiles = manifest.logs.files.filter((f) => f.name !== 'service.999999.jsonl');
    expect(ownFiles.length).toBeGreaterThan(0);
    expect(ownFiles.every((f) => !f.read)).toBe(true);
    const ownBytes = ownFiles.reduce((sum, f) => sum + f.bytes, 0);
    expect(manifest.logs.cut.files_beyond_cap).toEqual({ files: ownFiles.length, bytes: ownBytes });
    const cut = manifest.cuts.find((c) => c.entry === 'logs/service.jsonl');
    expect(cut).toMatchObject({ reason: 'size_cap', lines: 190, bytes: 190 * lineBytes + ownBytes });
    expect(cut!.detail).toMatch(/DEBUG_BUNDLE_LOG_MAX_BYTES/);
    expect(manifest.entries.find((e) => e.name === 'logs/service.jsonl')).toMatchObject({
      truncated: true,
      size: 10 * lineBytes,
    });
  });
});

/** A line of a PEM's base64 body past the common ASN.1 prefix: key material only. */
function pemBody(pem: string): string {
  const lines = pem.split('\n').filter((l) => l.length > 0 && !l.startsWith('-----'));
  return lines[1] ?? lines[0];
}
