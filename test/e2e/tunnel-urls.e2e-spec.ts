import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_NAMES } from '../../src/server/tunnel/url-check/validate-url.js';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import {
  startBindingResponder,
  startCoturn,
  type BindingResponder,
  type StunEndpoint,
} from '../support/stun.js';
import { TOPOLOGY_FIELDS } from '../support/tunnel-contract.js';

// Where this instance is reachable: GET topology and POST validate-url through the API. Every
// address a test hands the service is a literal (no DNS lookup), and every one the service could
// connect to is on loopback: a refused address must be refused before any connection, which the
// loopback cases prove with a listener that counts the connections it gets.

const VALIDATE = '/api/v1/tunnel/validate-url';

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
interface Validation {
  url: string | null;
  valid: boolean;
  reachable: boolean;
  checks: Check[];
}

/** A loopback TCP listener that only counts the connections it accepts. */
async function sentinel(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server: TcpServer = createTcpServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A loopback HTTP server that answers every request with a redirect to `location`. */
async function redirector(
  location: string,
): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server: HttpServer = createHttpServer((_req, res) => {
    count++;
    res.writeHead(302, { Location: location }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function checkOf(body: Validation, name: string): Check {
  const check = body.checks.find((c) => c.name === name);
  if (check === undefined) throw new Error(`no ${name} check in ${JSON.stringify(body)}`);
  return check;
}

/** The checks that touch the network: a refused URL has them skipped, so no request was made. */
const NETWORK_CHECKS = ['resolve', 'address', 'redirects', 'response', 'instance'];

/**
 * A refused URL: every check named, the first failing one is `failing` with a detail matching
 * `detail`, and every network check after it was skipped.
 */
function expectRefused(body: Validation, failing: string, detail: RegExp): void {
  expect(body.valid, JSON.stringify(body)).toBe(false);
  expect(body.reachable).toBe(false);
  expect(body.checks.map((c) => c.name)).toEqual(CHECK_NAMES);
  const index = body.checks.findIndex((c) => !c.ok);
  expect(body.checks[index]?.name, JSON.stringify(body.checks)).toBe(failing);
  expect(body.checks[index].detail).toMatch(detail);
  for (const later of body.checks.slice(index + 1))
    if (NETWORK_CHECKS.includes(later.name)) expect(later.detail, later.name).toMatch(/^skipped: /);
}

const validate = async (app: TestApp, body: unknown) =>
  app.http
    .post(VALIDATE)
    .set('Authorization', await app.adminAuth())
    .send(body as object);

async function validated(app: TestApp, body: unknown): Promise<Validation> {
  const res = await validate(app, body);
  expect(res.status, `${JSON.stringify(body).slice(0, 120)}: ${res.text.slice(0, 300)}`).toBe(200);
  return res.body as Validation;
}

async function registryUrl(app: TestApp): Promise<{ url: string; source: string }> {
  const res = await app.http.get('/api/v1/tunnel/registry-url').set('Authorization', await app.adminAuth());
  expect(res.status).toBe(200);
  return res.body as { url: string; source: string };
}

async function urlChanges(app: TestApp): Promise<{ actor: string; details: Record<string, unknown> }[]> {
  const res = await app.http
    .get('/api/v1/orchestrator/audit?action=tunnel.custom_url_changed')
    .set('Authorization', await app.adminAuth());
  expect(res.status).toBe(200);
  return res.body.events as { actor: string; details: Record<string, unknown> }[];
}

/** What the configuration says (testEnv's PUBLIC_URL): where nothing was stored. */
const CONFIGURED = { url: 'http://127.0.0.1', source: 'config' };

/** URLs that fail the URL rules, each with the check that fails; `host` is a loopback listener. */
const ruleRefusals = (host: string): [string, string, RegExp][] => [
  [`http://user:secret@${host}/`, 'credentials', /credentials are not allowed/],
  [`http://user@${host}/`, 'credentials', /credentials are not allowed/],
  [`ftp://${host}/`, 'scheme', /scheme ftp: is not allowed/],
  ['file:///etc/passwd', 'scheme', /scheme file: is not allowed/],
  ['javascript:alert(1)', 'scheme', /scheme javascript: is not allowed/],
  [`http://${host}/?a=1`, 'query', /query string is not allowed/],
  [`http://${host}/#top`, 'fragment', /fragment/],
  ['http://127.0.0.1:0/', 'port', /port 0/],
];

/**
 * Strings no URL check should choke on. Those that pass the URL rules name `host`, an address the
 * app under test refuses, so nothing is ever requested.
 */
const hostileUrls = (host: string): string[] => [
  `http://${host}/\u0000`,
  `http://${host}\r\nX-Injected: 1/`,
  `http://${host}/\n`,
  ` http://${host}/`,
  `http://${host}/\u202e`,
  `\u202ehttp://${host}/`,
  `//${host}/`,
  `http://${host}/${'%'.repeat(1500)}`,
  `http://${host}/${'\u{1F600}'.repeat(500)}`,
  'http://%00/',
  'http://[::1',
  'http://a b/',
  'http://127.0.0.1:99999/',
  '../../../../etc/passwd',
  `http://${'a'.repeat(300)}/`,
  '\u{1F600}'.repeat(600),
  'http://\u{1F600}\u0000/',
  "http://127.0.0.1/'; DROP TABLE tunnel_state; --",
  'data:text/html,<script>alert(1)</script>',
  'gopher://127.0.0.1:6379/_FLUSHALL',
  'HTTP://USER:PASS@127.0.0.1/',
  '\\\\127.0.0.1\\share',
];

async function expectHostileAnswered(app: TestApp, host: string): Promise<void> {
  for (const url of hostileUrls(host)) {
    const res = await validate(app, { url });
    if (res.status === 200) {
      const body = res.body as Validation;
      expect(body.checks.map((c) => c.name)).toEqual(CHECK_NAMES);
      expect(body.valid, JSON.stringify(url)).toBe(false);
      expect(body.reachable).toBe(false);
    } else {
      expect(res.status, JSON.stringify(url)).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
  }
}

// One app at a time per describe: passport keeps one `jwt` strategy per process, so only the app
// started last accepts tokens. The other instance below needs none (its well-known route is public).
let listener: Awaited<ReturnType<typeof sentinel>>;
beforeAll(async () => {
  listener = await sentinel();
});
afterAll(() => listener?.close());

describe('tunnel URLs where private URLs are refused (the default), STUN on a loopback coturn', () => {
  let t: TestApp;
  let coturn: StunEndpoint;
  beforeAll(async () => {
    coturn = await startCoturn();
    t = await startTestApp({ env: { TUNNEL_STUN_SERVERS: `${coturn.host}:${coturn.port}` } });
  });
  afterAll(async () => {
    await t?.close();
    await coturn?.stop();
  });

  it('topology: this machine is seen as 127.0.0.1, one of its own addresses, so no NAT', async () => {
    await t.http.get('/api/v1/tunnel/topology').expect(401);
    const read = `Bearer ${(await t.token(undefined, 'tunnel:read')).access_token}`;
    const res = await t.http.get('/api/v1/tunnel/topology').set('Authorization', read).expect(200);
    const body = res.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(TOPOLOGY_FIELDS);
    expect(body).toMatchObject({
      public_ip: '127.0.0.1',
      has_nat: false,
      recommended_mode: 'direct',
      environment: {
        kind: expect.stringMatching(/^(bare-metal|vm|container|kubernetes)$/),
        evidence: expect.any(Array),
      },
    });
    expect(body.local_ips).toContain('127.0.0.1');
    expect(body.reason).toMatch(/sees this machine as 127\.0\.0\.1, which is one of its own addresses/);
    for (const field of ['default_gateway', 'private_subnet'])
      expect(body[field] === null || typeof body[field] === 'string', field).toBe(true);
  });

  it('validate-url needs a token with tunnel:write', async () => {
    await t.http.post(VALIDATE).send({ url: 'http://127.0.0.1/' }).expect(401);
    const read = `Bearer ${(await t.token(undefined, 'tunnel:read')).access_token}`;
    await t.http.post(VALIDATE).set('Authorization', read).send({ url: 'http://127.0.0.1/' }).expect(403);
  });

  it('refuses private, loopback, link-local, CGNAT, multicast and mapped addresses before connecting', async () => {
    const port = listener.port;
    const cases: [string, RegExp][] = [
      ['http://10.0.0.1/', /10\.0\.0\.1 is private/],
      ['http://10.255.255.254:8080/', /is private/],
      ['http://172.16.0.1/', /172\.16\.0\.1 is private/],
      ['http://172.31.255.254/', /is private/],
      ['http://192.168.1.1/', /192\.168\.1\.1 is private/],
      [`http://127.0.0.1:${port}/`, /127\.0\.0\.1 is loopback/],
      [`http://[::1]:${port}/`, /::1 is loopback/],
      [`http://2130706433:${port}/`, /127\.0\.0\.1 is loopback/],
      [`http://0x7f.1:${port}/`, /127\.0\.0\.1 is loopback/],
      [`http://0177.0.0.1:${port}/`, /127\.0\.0\.1 is loopback/],
      ['http://169.254.10.20/', /169\.254\.10\.20 is link-local/],
      ['http://100.64.0.1/', /100\.64\.0\.1 is cgnat/],
      ['http://224.0.0.1/', /224\.0\.0\.1 is multicast/],
      ['http://[ff02::1]/', /ff02::1 is multicast/],
      [`http://[::ffff:127.0.0.1]:${port}/`, /ipv4-mapped, loopback/],
      ['http://[::ffff:10.1.2.3]/', /ipv4-mapped, private/],
      ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is metadata/],
      ['http://0.0.0.0/', /0\.0\.0\.0 is unspecified/],
    ];
    for (const [url, detail] of cases) {
      const body = await validated(t, { url });
      expectRefused(body, 'address', detail);
      expect(checkOf(body, 'resolve').detail).toMatch(/is an IP address: no lookup/);
    }
    expect(listener.connections()).toBe(0);
  });

  it('refuses credentials, other schemes, queries, fragments and port 0 before resolving anything', async () => {
    for (const [url, failing, detail] of ruleRefusals(`127.0.0.1:${listener.port}`)) {
      const body = await validated(t, { url });
      expectRefused(body, failing, detail);
      expect(checkOf(body, 'resolve').detail).toMatch(/^skipped: /);
    }
    expect(listener.connections()).toBe(0);
  });

  it('a missing, null or empty url is valid:false; a non-string, an unknown key or a bad save is 422', async () => {
    expectRefused(await validated(t, {}), 'present', /no URL was given/);
    expectRefused(await validated(t, { url: null }), 'present', /no URL was given/);
    expectRefused(await validated(t, { url: '' }), 'present', /the URL is empty/);
    expectRefused(await validated(t, { save: false }), 'present', /no URL was given/);
    const refused: [unknown, string][] = [
      [{ url: 5 }, 'url'],
      [{ url: true }, 'url'],
      [{ url: ['http://127.0.0.1/'] }, 'url'],
      [{ url: { href: 'http://127.0.0.1/' } }, 'url'],
      [{ url: 'http://10.0.0.1/', save: 'no' }, 'save'],
      [{ url: 'http://10.0.0.1/', save: 0 }, 'save'],
      [{ url: 'http://10.0.0.1/', extra: 1 }, 'extra'],
      // Over the DTO's 2048 characters: refused before any check runs.
      [{ url: `http://10.0.0.1/${'a'.repeat(2040)}` }, 'url'],
      [{ url: `http://${'a'.repeat(100_000)}/` }, 'url'],
    ];
    for (const [body, path] of refused) {
      const res = await validate(t, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
      expect((res.body.errors as { path: string }[]).map((e) => e.path)).toContain(path);
    }
  });

  it('hostile strings and bodies get an answer, never a 5xx, and nothing is requested', async () => {
    await expectHostileAnswered(t, `127.0.0.1:${listener.port}`);
    // Keys that would reach Object.prototype are dropped or refused; the app runs in this process,
    // so a polluted prototype would show here.
    for (const text of [
      '{"url": "http://10.0.0.1/", "__proto__": {"polluted": true}}',
      '{"url": "http://10.0.0.1/", "constructor": {"prototype": {"polluted": true}}}',
    ]) {
      const res = await t.http
        .post(VALIDATE)
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', 'application/json')
        .send(text);
      if (res.status === 200) expectRefused(res.body as Validation, 'address', /10\.0\.0\.1 is private/);
      else expect(res.status).toBe(422);
      expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
    }
    const raw: [string, string][] = [
      ['application/json', '{"url": '],
      ['application/json', `{"url": "${'a'.repeat(1024 * 1024 + 10)}"}`],
      ['text/plain', 'http://10.0.0.1/'],
    ];
    for (const [type, text] of raw) {
      const res = await t.http
        .post(VALIDATE)
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', type)
        .send(text);
      expect([400, 413, 415, 422], `${type} ${text.slice(0, 60)}`).toContain(res.status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(listener.connections()).toBe(0);
  });

  it('stores none of the refused URLs: the registry URL is the configured one, no change audited', async () => {
    expect(await registryUrl(t)).toEqual(CONFIGURED);
    expect(await urlChanges(t)).toEqual([]);
  });
});

describe('tunnel URLs where private URLs are allowed, with a STUN server that never answers', () => {
  let t: TestApp;
  /** Another instance on a database of its own; started first, since only its public route is used. */
  let other: TestApp;
  let silent: BindingResponder;
  beforeAll(async () => {
    silent = await startBindingResponder({ silent: true });
    other = await startTestApp();
    // PGlite test databases are copies of one migrated template and so share the id its migration
    // generated; a real second instance migrates a database of its own and gets its own id.
    await other.app.get(DataSource).query('UPDATE instance SET instance_id = gen_random_uuid()');
    t = await startTestApp({
      env: { TUNNEL_STUN_SERVERS: `${silent.host}:${silent.port}`, TUNNEL_ALLOW_PRIVATE_URLS: 'true' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await other?.close();
    await silent?.stop();
  });

  it('topology: no public address, and the reason names the deadline and the server asked', async () => {
    const res = await t.http
      .get('/api/v1/tunnel/topology')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(res.body).toMatchObject({ public_ip: null, has_nat: false, recommended_mode: 'tunnel' });
    expect(res.body.reason).toContain(
      `No STUN server answered within 3 s (asked ${silent.host}:${silent.port})`,
    );
    // It was asked, not skipped.
    expect(silent.requests).toBeGreaterThan(0);
  });

  it('still refuses the metadata addresses, and every URL rule', async () => {
    for (const url of [
      'http://169.254.169.254/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fd00:ec2::254]/',
    ])
      expectRefused(await validated(t, { url }), 'address', /metadata/);
    for (const [url, failing, detail] of ruleRefusals(`127.0.0.1:${listener.port}`))
      expectRefused(await validated(t, { url }), failing, detail);
    expect(listener.connections()).toBe(0);
  });

  it('refuses a redirect to the metadata address, 0.0.0.0, credentials or another scheme', async () => {
    // Where private URLs are refused, no loopback server can be the first hop, and a test must not
    // leave loopback: so this app allows private URLs, and each redirect leads where no setting helps.
    const targets: [string, RegExp][] = [
      ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is metadata/],
      ['http://[::ffff:169.254.169.254]/', /metadata/],
      [`http://0.0.0.0:${listener.port}/`, /0\.0\.0\.0 is unspecified/],
      ['file:///etc/passwd', /scheme file: is not allowed/],
      ['javascript:alert(1)', /scheme javascript: is not allowed/],
      [`ftp://127.0.0.1:${listener.port}/`, /scheme ftp: is not allowed/],
      [`http://user:pw@127.0.0.1:${listener.port}/`, /credentials are not allowed/],
    ];
    for (const [location, detail] of targets) {
      const server = await redirector(location);
      try {
        const body = await validated(t, { url: server.url });
        // The URL itself passed every rule and the policy, so it is valid; it leads nowhere allowed.
        expect(body.valid, JSON.stringify(body)).toBe(true);
        expect(body.reachable).toBe(false);
        const redirects = checkOf(body, 'redirects');
        expect(redirects.ok).toBe(false);
        expect(redirects.detail).toMatch(/^redirect 1 to .* refused: /);
        expect(redirects.detail).toMatch(detail);
        expect(checkOf(body, 'response').detail).toMatch(/^skipped: /);
        expect(server.requests()).toBe(1);
      } finally {
        await server.close();
      }
    }
    expect(listener.connections()).toBe(0);
  });

  it('hostile strings get an answer, never a 5xx, and nothing is requested', async () => {
    // 0.0.0.0 is refused whatever the setting (on Linux it would reach this host: the listener).
    await expectHostileAnswered(t, `0.0.0.0:${listener.port}`);
    expect(listener.connections()).toBe(0);
    expect(await registryUrl(t)).toEqual(CONFIGURED);
    expect(await urlChanges(t)).toEqual([]);
  });

  it("another owner's client with tunnel:write checks a URL but saves nothing, and may not start or stop the tunnel", async () => {
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'tenant-tunnel', owner: 'tenant-tunnel', scopes: ['tunnel:read', 'tunnel:write'] });
    expect(created.status, created.text).toBe(201);
    const tenant = await t.token({
      clientId: created.body.client_id as string,
      secret: created.body.client_secret as string,
    });
    const as = (path: string, body?: object) =>
      t.http
        .post(path)
        .set('Authorization', `Bearer ${tenant.access_token}`)
        .send(body ?? {});
    const own = `${t.url}/`;

    // The check itself is answered, as it is for the operator's clients; nothing is stored.
    const checked = await as(VALIDATE, { url: t.url });
    expect(checked.status, checked.text).toBe(200);
    expect(checked.body).toMatchObject({ url: own, valid: true, reachable: true });
    const refused = [
      await as(VALIDATE, { url: t.url, save: true }),
      await as('/api/v1/tunnel/start'),
      await as('/api/v1/tunnel/stop'),
    ];
    for (const res of refused) {
      expect(res.status, res.text).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.detail).toMatch(/only the operator owner's clients may change them/);
    }
    expect(await registryUrl(t)).toEqual(CONFIGURED);
    expect(await urlChanges(t)).toEqual([]);
    const status = await t.http.get('/api/v1/tunnel/status').set('Authorization', await t.adminAuth());
    expect(status.body.state).toBe('stopped');
    // Reads stay open to it.
    const registry = await t.http
      .get('/api/v1/tunnel/registry-url')
      .set('Authorization', `Bearer ${tenant.access_token}`);
    expect(registry.body).toEqual(CONFIGURED);
  });

  it("accepts this instance's own URL, which becomes the custom URL once; save:false stores nothing", async () => {
    const own = `${t.url}/`;
    const checked = await validated(t, { url: t.url, save: false });
    expect(checked).toMatchObject({ url: own, valid: true, reachable: true });
    expect(checked.checks.filter((c) => !c.ok)).toEqual([]);
    expect(checkOf(checked, 'instance').detail).toMatch(/^answered as this instance/);
    expect(await registryUrl(t)).toEqual(CONFIGURED);
    expect(await urlChanges(t)).toEqual([]);

    expect(await validated(t, { url: t.url })).toMatchObject({ url: own, valid: true, reachable: true });
    expect(await registryUrl(t)).toEqual({ url: own, source: 'custom' });
    // The same URL again changes nothing.
    await validated(t, { url: own, save: true });
    const changes = await urlChanges(t);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ actor: ADMIN.clientId, details: { url: own, previous: null } });
  });

  it("finds another instance's URL valid but not reachable, and does not store it", async () => {
    const body = await validated(t, { url: other.url });
    expect(body).toMatchObject({ valid: true, reachable: false });
    const otherId = (await other.http.get('/.well-known/stack-orchestrator').expect(200)).body.instance_id;
    const ownId = (await t.http.get('/.well-known/stack-orchestrator').expect(200)).body.instance_id;
    expect(otherId).not.toBe(ownId);
    expect(checkOf(body, 'instance')).toEqual({
      name: 'instance',
      ok: false,
      detail: `answered as another instance (${otherId})`,
    });
    expect(await registryUrl(t)).toEqual({ url: `${t.url}/`, source: 'custom' });
    expect(await urlChanges(t)).toHaveLength(1);
  });
});
