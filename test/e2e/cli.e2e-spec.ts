import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { ADMIN, eventually, startTestApp, type TestApp } from '../support/app.js';
import { freePort } from '../support/service-process.js';
import { AGENT, CLI, jsonOf, requireBuilt, stackctl } from '../support/stackctl.js';

interface ClientJson {
  client_id: string;
  client_secret: string;
  name: string;
  owner: string;
  scopes: string[];
}

interface KeysJson {
  keys: { kid: string; alg: string; status: string; publish_until: string | null }[];
}

interface CreatedJoinTokenJson {
  token: string;
  id: string;
  expires_at: string;
  pre_approved: boolean;
  labels: Record<string, string>;
}

interface JoinTokenJson {
  id: string;
  pre_approved: boolean;
  labels: Record<string, string>;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  expired: boolean;
  uses: number;
}

interface WorkerJson {
  id: string;
  name: string;
  status: string;
  last_heartbeat: string | null;
  metrics: { cpu_percent: number; memory_percent: number; disk_percent: number } | null;
  connected: boolean;
  labels: Record<string, string>;
}

const TOKEN_FORMAT = /^sojt_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$/;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `client_id:` and `client_secret:` lines of `clients create`'s text output. */
function createdCredentials(stdout: string): { clientId: string; secret: string } {
  const clientId = /^client_id:\s+(\S+)$/m.exec(stdout)?.[1];
  const secret = /^client_secret:\s+(\S+)$/m.exec(stdout)?.[1];
  expect(clientId, stdout).toBeDefined();
  expect(secret, stdout).toBeDefined();
  return { clientId: clientId!, secret: secret! };
}

/** A JWT's header (0) or payload (1). */
const decodeSegment = (jwt: string, index: 0 | 1): Record<string, unknown> =>
  JSON.parse(Buffer.from(jwt.split('.')[index], 'base64url').toString('utf8')) as Record<string, unknown>;

describe('stackctl, the operator CLI, against the running service', () => {
  let t: TestApp;
  /** The bootstrap admin's credentials as global options. */
  let flags: string[];
  /** The same credentials as environment variables. */
  let env: Record<string, string>;

  const agents: AgentProcess[] = [];

  beforeAll(async () => {
    requireBuilt([CLI, AGENT]);
    t = await startTestApp({
      // Quick heartbeats; and a busy test machine's CPU does not make the test's agents degraded.
      env: { HEARTBEAT_INTERVAL: '500ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
    flags = ['--server', t.url, '--client-id', ADMIN.clientId, '--client-secret', ADMIN.secret];
    env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
  });
  afterEach(async ({ task }) => {
    const stopped = agents.splice(0);
    await Promise.all(stopped.map((a) => a.stop('SIGKILL')));
    // A failed test shows what its agents said.
    if (task.result?.state === 'fail')
      for (const a of stopped) console.error(`agent output:\n${a.lines.slice(-40).join('\n')}`);
  });
  afterAll(() => t?.close());

  /** A real agent (dist/agent/main.js) enrolling with `token`; killed after the test. */
  const agent = (token: string, name: string): AgentProcess => {
    const a = AgentProcess.start({ server: t.url, token, name });
    agents.push(a);
    return a;
  };

  const listedWorkers = async (status?: string): Promise<WorkerJson[]> =>
    jsonOf<{ workers: WorkerJson[] }>(
      await stackctl(['--json', 'workers', 'list', ...(status ? ['--status', status] : [])], env),
    ).workers;

  const listedJoinTokens = async (): Promise<JoinTokenJson[]> =>
    jsonOf<{ join_tokens: JoinTokenJson[] }>(await stackctl(['--json', 'join-tokens', 'list'], env))
      .join_tokens;

  /** Polls `workers list` until a worker named `name` matches `test`; that worker. */
  async function waitForWorker(
    name: string,
    test: (w: WorkerJson) => boolean,
    status?: string,
  ): Promise<WorkerJson> {
    let found: WorkerJson | undefined;
    let seen: WorkerJson[] = [];
    try {
      await eventually(async () => {
        seen = (await listedWorkers(status)).filter((w) => w.name === name);
        found = seen.find(test);
        return found !== undefined;
      }, 20_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}; workers named ${name}: ${JSON.stringify(seen)}`, {
        cause: err,
      });
    }
    return found!;
  }

  const tokenRequest = (clientId: string, secret: string) =>
    t.http
      .post('/oauth/token')
      .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });

  const listedIds = async (owner?: string): Promise<string[]> => {
    const body = jsonOf<{ clients: { client_id: string }[] }>(
      await stackctl(['--json', 'clients', 'list', ...(owner ? ['--owner', owner] : [])], env),
    );
    return body.clients.map((c) => c.client_id);
  };

  it('--help prints the usage and exits 0', async () => {
    const run = await stackctl(['--help']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^Usage: stackctl /);
    for (const command of [
      'clients create',
      'clients list',
      'clients delete',
      'keys list',
      'keys rotate',
      'join-tokens create',
      'join-tokens list',
      'join-tokens revoke',
      'workers list',
      'workers approve',
      'workers delete',
    ])
      expect(run.stdout).toContain(command);
  });

  it('an unknown command, an unknown option or missing credentials exit 2 with a message', async () => {
    const unknown = await stackctl([...flags, 'clients', 'frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^stackctl: unknown command "clients frobnicate"\.\n/);

    const noGroup = await stackctl(['servers', 'list'], env);
    expect(noGroup.code).toBe(2);
    expect(noGroup.stderr).toMatch(/^stackctl: unknown command "servers list"/);

    const option = await stackctl([...flags, 'clients', 'list', '--frobnicate']);
    expect(option.code).toBe(2);
    expect(option.stderr).toMatch(/^stackctl: Unknown option '--frobnicate'\.\n/);

    const misplaced = await stackctl([...flags, 'keys', 'list', '--name', 'x']);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toMatch(/"keys list" does not take --name/);

    const noSecret = await stackctl(['--server', t.url, '--client-id', ADMIN.clientId, 'keys', 'list']);
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toMatch(/no client secret: give --client-secret or set STACKCTL_CLIENT_SECRET/);

    const noScopes = await stackctl([...flags, 'clients', 'create', '--name', 'x']);
    expect(noScopes.code).toBe(2);
    expect(noScopes.stderr).toMatch(/"clients create" needs --scopes/);

    const noAction = await stackctl([...flags, 'workers']);
    expect(noAction.code).toBe(2);
    expect(noAction.stderr).toMatch(/^stackctl: "workers" needs a command, e\.g\. "workers list"\.\n/);

    const noId = await stackctl([...flags, 'workers', 'approve']);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toMatch(/^stackctl: "workers approve" needs WORKER_ID\.\n/);

    const status = await stackctl([...flags, 'join-tokens', 'list', '--status', 'pending']);
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/"join-tokens list" does not take --status/);

    for (const [args, message] of [
      [['--label', 'zone'], /--label wants KEY=VALUE, got "zone"/],
      [['--label', '=a'], /--label wants KEY=VALUE, got "=a"/],
      [['--label', 'zone=a', '--label', 'zone=b'], /--label "zone" is given twice/],
    ] as const) {
      const run = await stackctl([...flags, 'join-tokens', 'create', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(message);
    }

    // A join token id may start with "-": it goes after "--", and the error says so.
    const dashed = await stackctl([...flags, 'join-tokens', 'revoke', '-AbCdEfGhIjKlMnO']);
    expect(dashed.code).toBe(2);
    expect(dashed.stderr).toMatch(
      /^stackctl: Unknown option '-A'\. An ID that starts with "-" goes after "--"\.\n/,
    );
  });

  it('clients create prints a client id and secret that obtain a token (credentials by flags)', async () => {
    const run = await stackctl([
      ...flags,
      'clients',
      'create',
      '--name',
      'ci deployer',
      '--scopes',
      'orchestrator:read,metrics:read',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/secret is shown only once/);
    const created = createdCredentials(run.stdout);
    expect(created.clientId).not.toBe(ADMIN.clientId);

    const token = await tokenRequest(created.clientId, created.secret).expect(200);
    expect(token.body.scope).toBe('orchestrator:read metrics:read');
    const claims = await t.http
      .get('/api/v1/auth/validate')
      .set('Authorization', `Bearer ${token.body.access_token}`)
      .expect(200);
    expect(claims.body).toMatchObject({ client_id: created.clientId, owner: 'default' });
  });

  it('clients create --json for another owner (credentials from the environment)', async () => {
    const created = jsonOf<ClientJson>(
      await stackctl(
        [
          '--json',
          'clients',
          'create',
          '--name',
          'team bot',
          '--scopes',
          'orchestrator:write',
          '--owner',
          'team-a',
        ],
        env,
      ),
    );
    expect(created).toMatchObject({ name: 'team bot', owner: 'team-a', scopes: ['orchestrator:write'] });
    const token = await tokenRequest(created.client_id, created.client_secret).expect(200);
    expect(token.body.scope).toBe('orchestrator:write');
    expect(decodeSegment(token.body.access_token as string, 1)).toMatchObject({
      client_id: created.client_id,
      owner: 'team-a',
    });
  });

  it('clients create reports the service validation errors and exits 1', async () => {
    const run = await stackctl([
      ...flags,
      'clients',
      'create',
      '--name',
      'x',
      '--scopes',
      'orchestrator:read,root',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const [first, ...fieldLines] = run.stderr.trimEnd().split('\n');
    expect(first).toMatch(
      /^stackctl: The request did not pass validation\. \(validation_failed, request \S+\)$/,
    );
    expect(fieldLines.join('\n')).toMatch(/^ {2}scopes\b.*each scope must be one of/m);
  });

  it('clients list prints every page of clients as a table, and filters by owner', async () => {
    // More clients than one page (the service's default is 50), in an owner of their own.
    const names = Array.from({ length: 57 }, (_, i) => `bulk ${i}`);
    const authorization = await t.adminAuth();
    const created = await Promise.all(
      names.map(async (name, i) => {
        const res = await t.http
          .post('/api/v1/auth/clients')
          .set('Authorization', authorization)
          .send({ name, owner: 'bulk', scopes: [i % 2 === 0 ? 'tunnel:read' : 'workers:admin'] })
          .expect(201);
        return res.body as { client_id: string; created_at: string };
      }),
    );
    const firstPage = await t.http
      .get('/api/v1/auth/clients?owner=bulk')
      .set('Authorization', authorization)
      .expect(200);
    expect(firstPage.body.next_cursor).toEqual(expect.any(String));
    expect(firstPage.body.clients.length).toBeLessThan(names.length);

    const listed = jsonOf<{ clients: { client_id: string; name: string; owner: string }[] }>(
      await stackctl(['--json', 'clients', 'list', '--owner', 'bulk'], env),
    );
    expect(listed.clients.map((c) => c.client_id).sort()).toEqual(created.map((c) => c.client_id).sort());
    expect(listed.clients.map((c) => c.name).sort()).toEqual([...names].sort());
    expect(new Set(listed.clients.map((c) => c.owner))).toEqual(new Set(['bulk']));

    const text = await stackctl([...flags, 'clients', 'list', '--owner', 'bulk']);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CLIENT_ID\s+NAME\s+OWNER\s+SCOPES\s+DISABLED\s+CREATED_AT$/);
    expect(lines).toHaveLength(names.length + 1);
    const row = lines.find((line) => line.startsWith(`${created[4].client_id} `));
    expect(row).toMatch(
      new RegExp(`^\\S+\\s+bulk 4\\s+bulk\\s+tunnel:read\\s+no\\s+${created[4].created_at}$`),
    );

    // Without --owner: the caller's own owner only.
    const own = await stackctl([...flags, 'clients', 'list']);
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(
      new RegExp(`^${ADMIN.clientId}\\s+bootstrap admin\\s+default\\s+admin\\s+no\\s`, 'm'),
    );
    expect(own.stdout).not.toContain('bulk');
  });

  it('clients delete removes the client: gone from the list, its secret refused', async () => {
    const created = createdCredentials(
      (await stackctl([...flags, 'clients', 'create', '--name', 'short-lived', '--scopes', 'tunnel:read']))
        .stdout,
    );
    await tokenRequest(created.clientId, created.secret).expect(200);
    expect(await listedIds()).toContain(created.clientId);

    const run = await stackctl(['clients', 'delete', created.clientId], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Deleted client ${created.clientId}.\n`);

    expect(await listedIds()).not.toContain(created.clientId);
    const refused = await tokenRequest(created.clientId, created.secret).expect(401);
    expect(refused.body.error).toBe('invalid_client');

    // Deleting it again: the service's 404 problem, exit 1.
    const again = await stackctl([...flags, 'clients', 'delete', created.clientId]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(
      new RegExp(`^stackctl: No client ${created.clientId}\\. \\(not_found, request [\\w.:-]+\\)\\n$`),
    );
  });

  // Many stackctl processes and a real agent: the limit guards against a hang, not a slow run.
  it('join-tokens create prints a token a real agent enrolls with; workers list, approve and delete manage it', async () => {
    const created = await stackctl([
      ...flags,
      'join-tokens',
      'create',
      '--ttl',
      '2h',
      '--label',
      'zone=a',
      '--label',
      'rack=r1',
    ]);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/token is shown only once/);
    const tokenId = /^Created join token (\S+)\.$/m.exec(created.stdout)?.[1];
    const token = /^token:\s+(\S+)$/m.exec(created.stdout)?.[1];
    const expiresAt = /^expires_at:\s+(\S+)$/m.exec(created.stdout)?.[1];
    expect(token, created.stdout).toMatch(TOKEN_FORMAT);
    expect(token!.slice(5, 21)).toBe(tokenId);
    const ttl = Date.parse(expiresAt!) - Date.now();
    expect(ttl).toBeGreaterThan(2 * 3_600_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(2 * 3_600_000);
    expect(created.stdout).toMatch(/^pre_approved:\s+no\b/m);
    expect(created.stdout).toMatch(/^labels:\s+rack=r1,zone=a$/m);

    const tokens = await listedJoinTokens();
    // Listed without its secret.
    expect(JSON.stringify(tokens)).not.toContain(token!.split('.')[1]);
    expect(tokens.find((j) => j.id === tokenId)).toMatchObject({
      pre_approved: false,
      labels: { zone: 'a', rack: 'r1' },
      created_at: expect.any(String),
      expires_at: expiresAt,
      revoked_at: null,
      expired: false,
      uses: 0,
    });

    // The agent enrolls and waits for approval.
    agent(token!, 'cli-node');
    const pending = await waitForWorker('cli-node', () => true, 'pending');
    expect(pending).toMatchObject({
      status: 'pending',
      connected: false,
      last_heartbeat: null,
      metrics: null,
      labels: { zone: 'a', rack: 'r1' },
    });
    expect((await listedWorkers('pending')).every((w) => w.status === 'pending')).toBe(true);
    const pendingTable = await stackctl([...flags, 'workers', 'list', '--status', 'pending']);
    expect(pendingTable.stderr).toBe('');
    expect(pendingTable.code).toBe(0);
    const [header, ...rows] = pendingTable.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+STATUS\s+CONNECTED\s+LAST_HEARTBEAT\s+CPU\s+MEM\s+DISK$/);
    expect(rows).toContainEqual(
      expect.stringMatching(new RegExp(`^${pending.id}\\s+cli-node\\s+pending\\s+no\\s+-\\s+-\\s+-\\s+-$`)),
    );
    const none = await stackctl(['workers', 'list', '--status', 'degraded'], env);
    expect(none.stdout).toBe('No workers with status degraded.\n');

    // Approved: the agent connects and heartbeats.
    const approved = await stackctl(['workers', 'approve', pending.id], env);
    expect(approved.stderr).toBe('');
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(
      new RegExp(`^Approved worker ${pending.id} \\(cli-node\\); its status is \\w+`),
    );
    // Healthy, or degraded when the test run itself pegs the machine's CPU (agents report it).
    const healthy = await waitForWorker(
      'cli-node',
      (w) => ['healthy', 'degraded'].includes(w.status) && w.connected,
    );
    expect(healthy.id).toBe(pending.id);
    expect(healthy.metrics!.memory_percent).toBeGreaterThan(0);
    expect(Date.now() - Date.parse(healthy.last_heartbeat!)).toBeLessThan(15_000);
    expect((await listedWorkers('pending')).map((w) => w.id)).not.toContain(pending.id);
    const table = await stackctl([...flags, 'workers', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      new RegExp(
        `^${pending.id}\\s+cli-node\\s+(healthy|degraded)\\s+yes\\s+\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+[\\d.]+%\\s+[\\d.]+%\\s+[\\d.]+%$`,
        'm',
      ),
    );

    // A second approval: the service's 409, exit 1. The --json form prints the worker.
    const again = await stackctl([...flags, 'workers', 'approve', pending.id]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(
      new RegExp(
        `^stackctl: Worker ${pending.id} is not pending approval\\. \\(conflict, request \\S+\\)\\n$`,
      ),
    );

    // The token counts its use.
    const tokenTable = await stackctl(['join-tokens', 'list'], env);
    expect(tokenTable.code).toBe(0);
    expect(tokenTable.stdout).toMatch(
      /^ID\s+PRE_APPROVED\s+LABELS\s+USES\s+CREATED_AT\s+EXPIRES_AT\s+EXPIRED\s+REVOKED_AT$/m,
    );
    expect(tokenTable.stdout).toMatch(
      new RegExp(
        `^${escape(tokenId!)}\\s+no\\s+rack=r1,zone=a\\s+1\\s+\\S+\\s+${expiresAt}\\s+no\\s+-$`,
        'm',
      ),
    );

    // Deleted: gone from the list at once; the agent, its identity revoked, enrolls again as pending.
    const deleted = await stackctl([...flags, 'workers', 'delete', pending.id]);
    expect(deleted.stderr).toBe('');
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toBe(`Deleted worker ${pending.id}.\n`);
    expect((await listedWorkers()).map((w) => w.id)).not.toContain(pending.id);
    const reenrolled = await waitForWorker('cli-node', (w) => w.id !== pending.id, 'pending');
    expect(reenrolled.status).toBe('pending');
    const gone = await stackctl(['workers', 'delete', pending.id], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(
      new RegExp(`^stackctl: No worker ${pending.id}\\. \\(not_found, request \\S+\\)\\n$`),
    );

    // --json: approve prints the service's worker; delete prints nothing.
    const approvedJson = jsonOf<WorkerJson & { approved_at: string | null }>(
      await stackctl(['--json', 'workers', 'approve', reenrolled.id], env),
    );
    expect(approvedJson).toMatchObject({
      id: reenrolled.id,
      name: 'cli-node',
      approved_at: expect.any(String),
    });
    const deletedJson = await stackctl(['--json', 'workers', 'delete', reenrolled.id], env);
    expect(deletedJson.code).toBe(0);
    expect(deletedJson.stdout).toBe('');
  }, 180_000);

  it('join-tokens revoke: the token shows revoked_at and an agent cannot enroll with it', async () => {
    const created = jsonOf<CreatedJoinTokenJson>(
      await stackctl(['--json', 'join-tokens', 'create', '--pre-approved'], env),
    );
    expect(created).toMatchObject({ id: created.token.slice(5, 21), pre_approved: true, labels: {} });
    expect(created.token).toMatch(TOKEN_FORMAT);
    // The service's default lifetime (JOIN_TOKEN_TTL, 24h).
    expect(Date.parse(created.expires_at) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);

    // "--" before the id: an id may start with "-".
    const run = await stackctl([...flags, 'join-tokens', 'revoke', '--', created.id]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Revoked join token ${created.id}.\n`);

    const listed = (await listedJoinTokens()).find((j) => j.id === created.id);
    expect(listed).toMatchObject({ pre_approved: true, labels: {}, expired: false, uses: 0 });
    expect(Date.now() - Date.parse(listed!.revoked_at!)).toBeLessThan(60_000);
    const table = await stackctl([...flags, 'join-tokens', 'list']);
    expect(table.stdout).toMatch(
      new RegExp(
        `^${escape(created.id)}\\s+yes\\s+-\\s+0\\s+\\S+\\s+${created.expires_at}\\s+no\\s+${listed!.revoked_at}$`,
        'm',
      ),
    );

    const a = agent(created.token, 'cli-revoked');
    expect(await a.exited).toBe(1);
    expect(a.records().some((r) => r.level === 'FATAL' && String(r.err).includes('enrollment refused'))).toBe(
      true,
    );
    expect((await listedWorkers()).map((w) => w.name)).not.toContain('cli-revoked');

    const unknown = await stackctl([...flags, 'join-tokens', 'revoke', 'AAAAAAAAAAAAAAAA']);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(
      /^stackctl: No join token AAAAAAAAAAAAAAAA\. \(not_found, request \S+\)\n$/,
    );
  });

  it('join-tokens list prints every page; create reports the service validation errors', async () => {
    const authorization = await t.adminAuth();
    const before = (await listedJoinTokens()).length;
    const ids = await Promise.all(
      Array.from({ length: 53 }, async () => {
        const res = await t.http
          .post('/api/v1/orchestrator/join-tokens')
          .set('Authorization', authorization)
          .send({ ttl: '1h' })
          .expect(201);
        return res.body.id as string;
      }),
    );
    const firstPage = await t.http
      .get('/api/v1/orchestrator/join-tokens')
      .set('Authorization', authorization)
      .expect(200);
    expect(firstPage.body.next_cursor).toEqual(expect.any(String));
    const listed = await listedJoinTokens();
    expect(listed).toHaveLength(before + ids.length);
    expect(listed.map((j) => j.id)).toEqual(expect.arrayContaining(ids));
    expect(new Set(listed.map((j) => j.id)).size).toBe(listed.length);
    const text = await stackctl([...flags, 'join-tokens', 'list']);
    expect(text.stdout.trimEnd().split('\n')).toHaveLength(listed.length + 1);

    const ttl = await stackctl([...flags, 'join-tokens', 'create', '--ttl', '10s']);
    expect(ttl.code).toBe(1);
    expect(ttl.stdout).toBe('');
    expect(ttl.stderr).toMatch(
      /^stackctl: The request did not pass validation\. \(validation_failed, request \S+\)\n {2}ttl: ttl must be between 1m and 365d\n$/,
    );
    const label = await stackctl([...flags, 'join-tokens', 'create', '--label', 'Bad Key=x']);
    expect(label.code).toBe(1);
    expect(label.stderr).toMatch(/^ {2}labels\.Bad Key: label keys are 1-63 of a-z 0-9/m);
    expect((await listedJoinTokens()).length).toBe(listed.length);
  });

  it('workers list --status with an unknown state: the service 422 message, exit 1', async () => {
    const run = await stackctl([...flags, 'workers', 'list', '--status', 'bogus']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^stackctl: The request did not pass validation\. \(validation_failed, request \S+\)\n {2}status: status must be one of healthy, degraded, unhealthy, unreachable, pending\n$/,
    );
  });

  it('keys rotate changes the signing key; the old one stays published', async () => {
    const before = (await t.http.get('/.well-known/jwks.json').expect(200)).body.keys as { kid: string }[];
    expect(before).toHaveLength(1);
    const oldKid = before[0].kid;
    const listedBefore = jsonOf<KeysJson>(await stackctl(['--json', 'keys', 'list'], env));
    expect(listedBefore.keys).toEqual([
      expect.objectContaining({ kid: oldKid, alg: 'ES256', status: 'signing' }),
    ]);

    const run = await stackctl([...flags, 'keys', 'rotate']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const newKid = /New key: (\S+)$/m.exec(run.stdout)?.[1];
    expect(newKid, run.stdout).toBeDefined();
    expect(newKid).not.toBe(oldKid);
    expect(run.stdout).toMatch(new RegExp(`^Retired .*: ${oldKid}$`, 'm'));

    const after = (await t.http.get('/.well-known/jwks.json').expect(200)).body.keys as { kid: string }[];
    expect(after.map((k) => k.kid).sort()).toEqual([oldKid, newKid].sort());
    // New tokens are signed with the new key.
    const token = await t.token();
    expect(decodeSegment(token.access_token, 0).kid).toBe(newKid);

    const table = await stackctl(['keys', 'list'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^KID\s+ALG\s+STATUS\s+CREATED_AT\s+PUBLISH_UNTIL$/m);
    expect(table.stdout).toMatch(new RegExp(`^${newKid}\\s+ES256\\s+signing\\s+\\S+\\s+-$`, 'm'));
    expect(table.stdout).toMatch(
      new RegExp(`^${oldKid}\\s+ES256\\s+published\\s+\\S+\\s+\\d{4}-\\d\\d-\\d\\dT\\S+$`, 'm'),
    );

    const again = jsonOf<{ kid: string; retired: string[] }>(
      await stackctl(['--json', 'keys', 'rotate'], env),
    );
    expect(again.retired).toEqual([newKid]);
    expect(again.kid).not.toBe(newKid);
    const jwks = (await t.http.get('/.well-known/jwks.json').expect(200)).body.keys as { kid: string }[];
    expect(jwks.map((k) => k.kid).sort()).toEqual([oldKid, newKid, again.kid].sort());
  });

  it('a wrong secret exits 1 with the token endpoint error on stderr, and does not echo the secret', async () => {
    const wrong = 'wrong-secret-0123456789';
    const run = await stackctl([
      '--server',
      t.url,
      '--client-id',
      ADMIN.clientId,
      '--client-secret',
      wrong,
      'clients',
      'list',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const match = /^stackctl: Client authentication failed\. \(invalid_client, request ([\w.:-]+)\)\n$/.exec(
      run.stderr,
    );
    expect(match, run.stderr).not.toBeNull();
    expect(run.stderr).not.toContain(wrong);
    // The request id is the one the service logged for that refusal: its audit record (the request
    // record of a 401 is only written at debug level).
    const record = t.logs.records().find((r) => r.request_id === match![1] && r.component === 'audit');
    expect(record).toMatchObject({
      audit_action: 'auth.failed',
      outcome: 'failure',
      target: ADMIN.clientId,
      details: { reason: 'bad_secret' },
    });

    // Same through the environment.
    const viaEnv = await stackctl(['keys', 'list'], { ...env, STACKCTL_CLIENT_SECRET: wrong });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toMatch(
      /^stackctl: Client authentication failed\. \(invalid_client, request \S+\)\n$/,
    );
    expect(viaEnv.stderr).not.toContain(wrong);
  });

  it('a server that does not answer exits 1 with a clear message', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = await stackctl(['keys', 'list'], { ...env, STACKCTL_SERVER: url });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `stackctl: cannot reach ${url}: connect ECONNREFUSED ${url.slice('http://'.length)}.\n`,
    );
  });
});
