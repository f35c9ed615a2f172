import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { freePort } from '../support/service-process.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built stackctl with exactly `env` (plus PATH), so no STACKCTL_* variable of the shell
 * running the tests leaks in. Asynchronous: the service answering it runs in this process.
 */
async function stackctl(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const run = await new Promise<CliRun>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  // Whatever the command, the credentials it was given never show.
  expect(run.stdout + run.stderr).not.toContain(ADMIN.secret);
  return run;
}

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

/** The JSON stackctl printed, after checking it succeeded. */
function jsonOf<T>(run: CliRun): T {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}

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

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
    t = await startTestApp();
    flags = ['--server', t.url, '--client-id', ADMIN.clientId, '--client-secret', ADMIN.secret];
    env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
  });
  afterAll(() => t?.close());

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
    for (const command of ['clients create', 'clients list', 'clients delete', 'keys list', 'keys rotate'])
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
    // The request id is the one the service logged for that refusal.
    const record = t.logs.records().find((r) => r.request_id === match![1] && r.component === 'http');
    expect(record).toMatchObject({
      res: { status_code: 401 },
      req: { method: 'POST', path: '/oauth/token' },
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
