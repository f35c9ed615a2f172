import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quotePosix, quotePowerShell } from '../../src/server/tunnel/install/shell-quote.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { freePort } from '../support/stacks.js';
import { running } from '../support/process-state.js';

const ROUTE = '/api/v1/tunnel/install-command';
const SCRIPTS = new URL('../../src/server/tunnel/install/scripts/', import.meta.url);

interface InstallCommand {
  linux: string;
  windows: string;
  registry_url: string;
  ca_fingerprint: string;
  expires_at: string;
}

describe('the install command, the installers and the agent download', () => {
  let t: TestApp;
  let registry: string;
  /** Where hostile tokens would create files if anything ran them. */
  let trap: string;

  beforeAll(async () => {
    trap = mkdtempSync(join(tmpdir(), 'install-trap-'));
    // PUBLIC_URL is the registry URL: it must name the HTTP port the agent downloads from.
    const port = await freePort();
    registry = `http://127.0.0.1:${port}`;
    t = await startTestApp({
      env: {
        PORT: String(port),
        PUBLIC_URL: registry,
        HEARTBEAT_INTERVAL: '400ms',
        // Machine-wide CPU under a parallel test run may pass 90 %; health is not what is tested here.
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    rmSync(trap, { recursive: true, force: true });
  });

  async function api(method: 'get' | 'post' | 'delete', path: string, body?: unknown, auth?: string) {
    const req = t.http[method](path).set('Authorization', auth ?? (await t.adminAuth()));
    return body === undefined ? req : req.send(body as object);
  }

  async function joinToken(
    body: object = {},
    auth?: string,
  ): Promise<{ token: string; id: string; expires_at: string }> {
    const res = await api('post', '/api/v1/orchestrator/join-tokens', body, auth);
    expect(res.status).toBe(201);
    return res.body as { token: string; id: string; expires_at: string };
  }

  /** A 422 problem naming the token, never anything else. */
  async function refused(body: unknown, auth?: string): Promise<string> {
    const res = await api('post', ROUTE, body, auth);
    expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect((res.body.errors as { path: string }[]).map((e) => e.path)).toContain('token');
    return res.headers['x-request-id'];
  }

  it('needs a token with tunnel:write', async () => {
    const { token } = await joinToken();
    await t.http.post(ROUTE).send({ token }).expect(401);
    const read = `Bearer ${(await t.token(undefined, 'tunnel:read')).access_token}`;
    await t.http.post(ROUTE).set('Authorization', read).send({ token }).expect(403);
    const write = `Bearer ${(await t.token(undefined, 'tunnel:write')).access_token}`;
    await t.http.post(ROUTE).set('Authorization', write).send({ token }).expect(200);
  });

  it('refuses a missing, non-string or malformed token with 422, before any database query', async () => {
    const hostile = [
      `$(touch ${trap}/a)`,
      `\`touch ${trap}/b\``,
      `sojt_abcdefghijklmnop.${'A'.repeat(42)}'`,
      `sojt_abcdefghijklmnop.${'A'.repeat(42)}"`,
      `sojt_abcdefghijklmnop.${'A'.repeat(43)}\n; touch ${trap}/c`,
      `sojt_abcdefghijklmnop.${'A'.repeat(43)}\u2019`,
      `sojt_abcdefghijklmnop.${'A'.repeat(43)} `,
      'x'.repeat(10 * 1024),
      '',
      'sojt_short.secret',
    ];
    for (const body of [
      {},
      { token: 5 },
      { token: null },
      { token: ['x'] },
      { token: { a: 1 } },
      ...hostile.map((token) => ({ token })),
    ]) {
      await refused(body);
    }
    expect(readdirSync(trap)).toEqual([]);
    // Right after another request of the same client (its record cached), a malformed token costs no query.
    await refused({ token: 'sojt_short.secret' });
    const id = await refused({ token: `$(touch ${trap}/d)` });
    const record = t.logs.records().find((r) => r.request_id === id && typeof r.db_queries === 'number');
    expect(record?.db_queries).toBe(0);
  });

  it("refuses a well-formed token that is unknown, expired, revoked or another owner's", async () => {
    await refused({ token: `sojt_${'a'.repeat(16)}.${'b'.repeat(43)}` });
    const live = await joinToken();
    // The right id with the wrong secret.
    await refused({ token: `${live.token.split('.')[0]}.${'b'.repeat(43)}` });

    const expired = await joinToken();
    await t.app
      .get(DataSource)
      .query(`UPDATE join_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    await refused({ token: expired.token });

    const revoked = await joinToken();
    expect((await api('delete', `/api/v1/orchestrator/join-tokens/${revoked.id}`)).status).toBe(204);
    await refused({ token: revoked.token });

    const acme = await api('post', '/api/v1/auth/clients', {
      name: 'acme admin',
      owner: 'acme',
      scopes: ['admin'],
    });
    expect(acme.status).toBe(201);
    const acmeAuth = `Bearer ${(await t.token({ clientId: acme.body.client_id as string, secret: acme.body.client_secret as string })).access_token}`;
    const theirs = await joinToken({}, acmeAuth);
    await refused({ token: theirs.token });
    // Its owner gets it.
    expect((await api('post', ROUTE, { token: theirs.token }, acmeAuth)).status).toBe(200);
  });

  it('answers the commands for a live token, every value quoted, and counts no use of it', async () => {
    const created = await joinToken({ ttl: '2h' });
    const res = await api('post', ROUTE, { token: created.token });
    expect(res.status).toBe(200);
    const body = res.body as InstallCommand;
    const info = await api('get', '/api/v1/orchestrator/info');
    expect(body.registry_url).toBe(registry);
    expect(body.ca_fingerprint).toBe(info.body.ca_fingerprint);
    expect(body.expires_at).toBe(created.expires_at);
    const sha256 = /--sha256 '([0-9a-f]{64})'/.exec(body.linux)?.[1];
    expect(body.linux).toBe(
      `if command -v curl >/dev/null 2>&1; then curl -fsSL ${quotePosix(`${registry}/install.sh`)}; ` +
        `else wget -qO- ${quotePosix(`${registry}/install.sh`)}; fi | STACK_AGENT_TOKEN=${quotePosix(created.token)} sh -s --` +
        ` --server ${quotePosix(registry)} --sha256 '${sha256}' --ca-fingerprint ${quotePosix(body.ca_fingerprint)}`,
    );
    expect(body.windows).toContain(`-Token ${quotePowerShell(created.token)}`);
    expect(body.windows).toContain(`-Uri ${quotePowerShell(`${registry}/install.ps1`)}`);
    const listed = await api('get', '/api/v1/orchestrator/join-tokens?limit=200');
    expect(
      (listed.body.join_tokens as { id: string; uses: number }[]).find((j) => j.id === created.id)?.uses,
    ).toBe(0);
  });

  it('serves install.sh, install.ps1 and the agent without a token; the agent is the file the command names', async () => {
    for (const name of ['install.sh', 'install.ps1']) {
      const res = await t.http.get(`/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.text).toBe(readFileSync(new URL(name, SCRIPTS), 'utf8'));
    }
    const { token } = await joinToken();
    const { linux } = (await api('post', ROUTE, { token })).body as InstallCommand;
    const sha256 = /--sha256 '([0-9a-f]{64})'/.exec(linux)?.[1];
    const agent = await t.http
      .get('/downloads/stack-agent.mjs')
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(agent.status).toBe(200);
    expect(agent.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(agent.headers.etag).toBe(`"${sha256}"`);
    expect(
      createHash('sha256')
        .update(agent.body as Buffer)
        .digest('hex'),
    ).toBe(sha256);
    await t.http.get('/downloads/stack-agent.mjs').set('If-None-Match', `"${sha256}"`).expect(304);
    await t.http.get('/downloads/stack-agent.mjs').set('If-None-Match', `W/"x", "${sha256}"`).expect(304);
    await t.http.get('/downloads/stack-agent.mjs').set('If-None-Match', '"other"').expect(200);
  });

  describe('the linux command pasted into sh', () => {
    let home: string;
    let pidFile: string;
    let shell: ChildProcess | undefined;

    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), 'install-home-'));
      pidFile = join(home, '.local/share/stack-agent/agent.pid');
    });

    /** The agent by its pid file, and the shell's whole process group by its id, even on failure. */
    afterAll(() => {
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined;
      for (const target of [pid, shell?.pid === undefined ? undefined : -shell.pid]) {
        if (target === undefined) continue;
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(home, { recursive: true, force: true });
    });

    it('installs a real agent that enrolls and turns healthy, and stops by its pid file', async () => {
      const { token } = await joinToken({ pre_approved: true });
      const { linux } = (await api('post', ROUTE, { token })).body as InstallCommand;
      // This machine: loopback only, any free probe port, and no systemd unit even if run as root.
      const pasted = `${linux} --no-systemd --name install-e2e --address 127.0.0.1 --probe-bind 127.0.0.1 --probe-port 0`;
      const child = spawn('/bin/sh', ['-c', pasted], {
        env: { HOME: home, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      shell = child;
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, output).toBe(0);
      const dir = join(home, '.local/share/stack-agent');
      expect(output).toContain(`log:  ${dir}/agent.log`);
      expect(output).not.toContain(token);

      const worker = async () => {
        const res = await api('get', '/api/v1/orchestrator/workers?limit=200');
        return (res.body.workers as { name: string; status: string; connected: boolean }[]).find(
          (w) => w.name === 'install-e2e',
        );
      };
      await eventually(async () => {
        const w = await worker();
        return w?.connected === true && w.status === 'healthy';
      }, 30_000);
      const log = readFileSync(join(dir, 'agent.log'), 'utf8');
      expect(log).toContain('"msg":"connected"');
      expect(log).not.toContain(token);

      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(running(pid)).toBe(true);
      process.kill(pid, 'SIGTERM');
      await eventually(() => !running(pid), 15_000);
      await eventually(async () => (await worker())?.connected === false, 15_000);
    });
  });
});
