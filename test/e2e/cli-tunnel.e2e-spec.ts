import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { relayTunnel, startRelay, type Relay } from '../support/relay.js';
import { jsonOf, requireBuilt, stackctl } from '../support/stackctl.js';
import { TOPOLOGY_FIELDS } from '../support/tunnel-contract.js';

// stackctl's tunnel commands, run as the built program against the service with the ssh provider
// configured to a real sshd on loopback (the environment of tunnel-api.e2e-spec.ts).

interface StatusJson {
  state: string;
  provider: string;
  public_url: string | null;
  agent_endpoint: string | null;
  started_at: string | null;
  last_error: string | null;
}

interface InstallJson {
  linux: string;
  windows: string;
  registry_url: string;
  ca_fingerprint: string;
  expires_at: string;
}

const TOKEN_FORMAT = /^sojt_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$/;

/** A `name: value` line of stackctl's text output. */
const field = (stdout: string, name: string): string | undefined =>
  new RegExp(`^${name}:\\s+(.*)$`, 'm').exec(stdout)?.[1];

async function answersThrough(url: string): Promise<boolean> {
  return fetch(`${url}/health/live`, { signal: AbortSignal.timeout(3000) }).then(
    (res) => res.status === 200,
    () => false,
  );
}

describe('stackctl tunnel against a service whose tunnel goes to a real relay', () => {
  let relay: Relay;
  let t: TestApp;
  let env: Record<string, string>;
  let publicUrl: string;
  let agentEndpoint: string;
  let dir: string;

  beforeAll(async () => {
    requireBuilt();
    dir = mkdtempSync(join(tmpdir(), 'cli-tunnel-'));
    relay = await startRelay();
    const tunnel = await relayTunnel(relay);
    ({ publicUrl, agentEndpoint } = tunnel);
    t = await startTestApp({
      // The relay's port is on loopback: validate-url may check it only with private URLs allowed.
      env: { ...tunnel.env, TUNNEL_ALLOW_PRIVATE_URLS: 'true' },
    });
    env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
  });
  afterAll(async () => {
    await t?.close();
    await relay?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const status = async () => jsonOf<StatusJson>(await stackctl(['--json', 'tunnel', 'status'], env));
  const newJoinToken = async () =>
    jsonOf<{ token: string }>(await stackctl(['--json', 'join-tokens', 'create', '--ttl', '1h'], env)).token;

  it('--help lists the tunnel commands', async () => {
    const run = await stackctl(['--help']);
    expect(run.code).toBe(0);
    for (const command of [
      'status',
      'start',
      'stop',
      'registry-url',
      'topology',
      'subdomains',
      'services BASE_ID',
      'validate-url URL [--no-save]',
      'install-command [--token-file FILE]',
    ])
      expect(run.stdout).toContain(`  tunnel ${command}`);
    expect(run.stdout).toContain('STACKCTL_JOIN_TOKEN');
  });

  it('status says stopped, as text and as the service JSON', async () => {
    const run = await stackctl(['tunnel', 'status'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(field(run.stdout, 'state')).toBe('stopped');
    expect(field(run.stdout, 'provider')).toBe('ssh');
    expect(field(run.stdout, 'public_url')).toBe('-');
    expect(await status()).toEqual({
      state: 'stopped',
      provider: 'ssh',
      public_url: null,
      agent_endpoint: null,
      started_at: null,
      last_error: null,
    });
    expect(jsonOf(await stackctl(['--json', 'tunnel', 'registry-url'], env))).toEqual({
      url: 'http://127.0.0.1',
      source: 'config',
    });
  });

  it('a client without tunnel:write cannot start it: the 403 problem, exit 1', async () => {
    const created = jsonOf<{ client_id: string; client_secret: string }>(
      await stackctl(['--json', 'clients', 'create', '--name', 'reader', '--scopes', 'tunnel:read'], env),
    );
    const reader = {
      ...env,
      STACKCTL_CLIENT_ID: created.client_id,
      STACKCTL_CLIENT_SECRET: created.client_secret,
    };
    const run = await stackctl(['tunnel', 'start'], reader, { secrets: [created.client_secret] });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^stackctl: .*\(forbidden, request [^)]+\)$/m);
    expect(jsonOf<StatusJson>(await stackctl(['--json', 'tunnel', 'status'], reader)).state).toBe('stopped');
  });

  it('start: running with the public URL, and the service answers through the relay', async () => {
    const run = await stackctl(['tunnel', 'start'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(field(run.stdout, 'state')).toBe('running');
    expect(field(run.stdout, 'public_url')).toBe(publicUrl);
    expect(field(run.stdout, 'agent_endpoint')).toBe(agentEndpoint);
    expect(await answersThrough(publicUrl)).toBe(true);
    const running = await status();
    expect(running).toMatchObject({ state: 'running', public_url: publicUrl, last_error: null });
    // Again: idempotent, same start time.
    const again = jsonOf<StatusJson>(await stackctl(['--json', 'tunnel', 'start'], env));
    expect(again.started_at).toBe(running.started_at);
    const registry = await stackctl(['tunnel', 'registry-url'], env);
    expect(field(registry.stdout, 'url')).toBe(publicUrl);
    expect(field(registry.stdout, 'source')).toBe("tunnel (the running tunnel's public URL)");
  });

  it('topology: every field of the contract, as text and JSON', async () => {
    const json = jsonOf<Record<string, unknown>>(await stackctl(['--json', 'tunnel', 'topology'], env));
    expect(Object.keys(json).sort()).toEqual(TOPOLOGY_FIELDS);
    // The test app asks no STUN server (TUNNEL_STUN_SERVERS=none): the address is unknown.
    expect(json).toMatchObject({ public_ip: null, has_nat: false, recommended_mode: 'tunnel' });
    const run = await stackctl(['tunnel', 'topology'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(field(run.stdout, 'recommended_mode')).toBe('tunnel');
    expect(field(run.stdout, 'public_ip')).toBe('-');
    expect(field(run.stdout, 'has_nat')).toBe('no');
    expect(field(run.stdout, 'local_ips')).toContain('127.0.0.1');
    expect(field(run.stdout, 'reason')).toMatch(/No STUN server is configured \(TUNNEL_STUN_SERVERS\)/);
  });

  it('install-command with a join token from a file: the commands name the tunnel as the registry', async () => {
    const token = await newJoinToken();
    expect(token).toMatch(TOKEN_FORMAT);
    const file = join(dir, 'join-token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const json = jsonOf<InstallJson>(
      await stackctl(['--json', 'tunnel', 'install-command', '--token-file', file], env),
    );
    expect(json.registry_url).toBe(publicUrl);
    expect(json.linux).toContain(`STACK_AGENT_TOKEN='${token}'`);
    expect(json.linux).toContain(`--server '${publicUrl}'`);
    expect(json.windows).toContain(`-Token '${token}'`);
    const info = await t.http.get('/api/v1/orchestrator/info').set('Authorization', await t.adminAuth());
    expect(json.ca_fingerprint).toBe(info.body.ca_fingerprint);

    const text = await stackctl(['tunnel', 'install-command', '--token-file', file], env);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines).toContain(json.linux);
    expect(lines).toContain(json.windows);
    expect(field(text.stdout, 'registry_url')).toBe(publicUrl);
    expect(field(text.stdout, 'expires_at')).toBe(json.expires_at);
  });

  it('install-command takes the token from standard input or STACKCTL_JOIN_TOKEN, never from argv', async () => {
    const token = await newJoinToken();
    const piped = jsonOf<InstallJson>(
      await stackctl(['--json', 'tunnel', 'install-command', '--token-file', '-'], env, {
        input: `${token}\n`,
      }),
    );
    expect(piped.linux).toContain(token);
    const fromEnv = jsonOf<InstallJson>(
      await stackctl(['--json', 'tunnel', 'install-command'], { ...env, STACKCTL_JOIN_TOKEN: token }),
    );
    expect(fromEnv.linux).toBe(piped.linux);

    const usage = async (args: string[], extra: Record<string, string>, message: RegExp, input?: string) => {
      const run = await stackctl(
        ['tunnel', 'install-command', ...args],
        { ...env, ...extra },
        {
          input,
          secrets: [token],
        },
      );
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(message);
    };
    await usage([token], {}, /takes no argument: give the join token by --token-file FILE/);
    await usage(['--token', token], {}, /Unknown option '--token'/);
    await usage(
      [],
      {},
      /needs the join token: --token-file FILE, --token-file - \(standard input\) or STACKCTL_JOIN_TOKEN/,
    );
    await usage(
      ['--token-file', '-'],
      { STACKCTL_JOIN_TOKEN: token },
      /one way: --token-file or STACKCTL_JOIN_TOKEN/,
    );
    await usage(['--token-file', join(dir, 'missing')], {}, /cannot read --token-file ".*missing": ENOENT/);
    await usage(['--token-file', '-'], {}, /standard input must hold the join token and nothing else/, '');
    await usage(['--token-file', '-'], {}, /more than 4096 bytes/, `${token}\n`.repeat(100));
    const twoLines = join(dir, 'two-lines');
    writeFileSync(twoLines, `${token}\nsecond line\n`);
    await usage(['--token-file', twoLines], {}, /"[^"]*two-lines" must hold the join token and nothing else/);
  });

  it('install-command with hostile token text: refused by stackctl (2) or the service (422, exit 1), never a 5xx', async () => {
    const trap = mkdtempSync(join(dir, 'trap-'));
    const hostile = [
      `$(touch${'\t'}${trap}/a)`,
      `\`touch ${trap}/b\``,
      `sojt_abcdefghijklmnop.${'A'.repeat(42)}'`,
      `sojt_abcdefghijklmnop.${'A'.repeat(43)}\u2019`,
      `sojt_abcdefghijklmnop.${'A'.repeat(43)};touch${'${IFS}'}${trap}/c`,
      '\u001b[2J\u001b[31m',
      '\u0000',
      'x'.repeat(4000),
      'sojt_short.secret',
      '%s%n%x',
    ];
    for (const text of hostile) {
      const run = await stackctl(['tunnel', 'install-command', '--token-file', '-'], env, { input: text });
      expect([1, 2], JSON.stringify(text)).toContain(run.code);
      expect(run.stdout).toBe('');
      if (run.code === 1) expect(run.stderr).toMatch(/\(validation_failed, request [^)]+\)\n {2}token: /);
      else expect(run.stderr).toMatch(/must hold the join token and nothing else/);
    }
    expect(readdirSync(trap)).toEqual([]);
  });

  it('validate-url: the tunnel URL reaches this instance and becomes the custom URL; refused URLs exit 1', async () => {
    const checked = await stackctl(['tunnel', 'validate-url', publicUrl, '--no-save'], env);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/^CHECK\s+OK\s+DETAIL$/m);
    expect(checked.stdout).toMatch(/^instance\s+yes\s+answered as this instance/m);
    expect(checked.stdout).toContain(`${publicUrl}/ reaches this instance; nothing was stored (--no-save).`);

    const saved = jsonOf<{ url: string; valid: boolean; reachable: boolean }>(
      await stackctl(['--json', 'tunnel', 'validate-url', publicUrl], env),
    );
    expect(saved).toMatchObject({ url: `${publicUrl}/`, valid: true, reachable: true });
    // The running tunnel still comes first.
    expect(jsonOf(await stackctl(['--json', 'tunnel', 'registry-url'], env))).toEqual({
      url: publicUrl,
      source: 'tunnel',
    });

    const refused = await stackctl(['tunnel', 'validate-url', 'http://169.254.169.254/latest/'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^address\s+no\s+169\.254\.169\.254 is metadata/m);
    expect(refused.stderr).toMatch(
      /^stackctl: http:\/\/169\.254\.169\.254\/latest\/ is not a valid public URL: address: 169\.254\.169\.254 is metadata.*\. Nothing was stored\.$/m,
    );
    const scheme = await stackctl(['--json', 'tunnel', 'validate-url', 'file:///etc/passwd'], env);
    expect(scheme.code).toBe(1);
    expect(JSON.parse(scheme.stdout)).toMatchObject({ valid: false, reachable: false });
    expect(scheme.stderr).toMatch(/scheme: scheme file: is not allowed/);
    const huge = await stackctl(['tunnel', 'validate-url', `http://${'a'.repeat(3000)}/`], env);
    expect(huge.code).toBe(1);
    expect(huge.stderr).toMatch(/\(validation_failed, request [^)]+\)\n {2}url: /);
    const hostile = await stackctl(['tunnel', 'validate-url', 'http://127.0.0.1/\u001b[2J'], env);
    expect(hostile.code).toBe(1);
    expect(hostile.stderr).toMatch(/whitespace or control characters/);
  });

  it('subdomains and services: none published yet; an unknown base is the 404 problem', async () => {
    const list = await stackctl(['tunnel', 'subdomains'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toBe('No base subdomains: one is created when a stack publishes a service.\n');
    expect(jsonOf(await stackctl(['--json', 'tunnel', 'subdomains'], env))).toEqual({ subdomains: [] });
    const unknown = await stackctl(['tunnel', 'services', 'nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^stackctl: No base subdomain nope\. \(not_found, request [^)]+\)$/m);
    const missing = await stackctl(['tunnel', 'services'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/"tunnel services" needs BASE_ID/);
  });

  it('stop: stopped, the relay port closed, and the custom URL is the registry URL now', async () => {
    const run = await stackctl(['tunnel', 'stop'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(field(run.stdout, 'state')).toBe('stopped');
    expect(field(run.stdout, 'public_url')).toBe('-');
    expect(await answersThrough(publicUrl)).toBe(false);
    expect((await status()).state).toBe('stopped');
    expect(jsonOf(await stackctl(['--json', 'tunnel', 'registry-url'], env))).toEqual({
      url: `${publicUrl}/`,
      source: 'custom',
    });
    const audit = await t.http
      .get('/api/v1/orchestrator/audit?limit=200')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    const actions = (audit.body.events as { action: string }[]).map((e) => e.action);
    for (const action of ['tunnel.started', 'tunnel.stopped', 'tunnel.custom_url_changed'])
      expect(
        actions.filter((a) => a === action),
        action,
      ).toHaveLength(1);
  });
});

describe('stackctl tunnel start without a usable tunnel configuration', () => {
  let t: TestApp;
  beforeAll(async () => {
    requireBuilt();
    t = await startTestApp({ env: { TUNNEL_SSH_HOST: '127.0.0.1' } });
  });
  afterAll(() => t?.close());

  it("prints the service's 409 problem naming what is missing, exit 1, and the tunnel stays stopped", async () => {
    const env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
    const run = await stackctl(['tunnel', 'start'], env);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^stackctl: .*TUNNEL_SSH_HOST_KEY.*\(\w+, request [^)]+\)$/m);
    expect(run.stderr).toContain('TUNNEL_SSH_KEY_FILE');
    expect(jsonOf<StatusJson>(await stackctl(['--json', 'tunnel', 'status'], env)).state).toBe('stopped');
  });
});
