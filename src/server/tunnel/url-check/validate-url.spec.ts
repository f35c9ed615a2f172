import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AddressPolicy, classifyAddress, createAddressPolicy } from './address-policy.js';
import type { HostLookup } from './pinned-fetch.js';
import { CHECK_NAMES, type TunnelUrlValidation, validateTunnelUrl, WELL_KNOWN_PATH } from './validate-url.js';

const INSTANCE = 'inst-7f3a';
const strict = createAddressPolicy({ allowPrivate: false });
/** The real policy, except that 127.0.0.1 stands in for a public address: tests stay on loopback. */
const onlyFirstLoopback: AddressPolicy = (address) =>
  address === '127.0.0.1' ? { allowed: true, categories: [] } : strict(address);

/** Names the tests use, answered without DNS; anything else fails like an unknown name. */
function names(table: Record<string, string[]>): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup: HostLookup = (hostname) => {
    calls.push(hostname);
    const list = table[hostname];
    if (list === undefined) {
      return Promise.reject(Object.assign(new Error(`no test name ${hostname}`), { code: 'ENOTFOUND' }));
    }
    return Promise.resolve(list.map((address) => ({ address, family: net.isIP(address) })));
  };
  return Object.assign(lookup, { calls });
}
const noNames = names({});

// A fence, not a mock: a refused address must never see traffic, and if the code under test were
// wrong the connection would go to a real network. Any non-loopback IP connect fails instead.
// eslint-disable-next-line @typescript-eslint/unbound-method -- called below with apply and the socket
const realConnect = net.Socket.prototype.connect;
beforeAll(() => {
  vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (
    this: net.Socket,
    ...args: unknown[]
  ) {
    const first: unknown = Array.isArray(args[0]) ? args[0][0] : args[0];
    const host = typeof first === 'object' && first !== null ? (first as { host?: unknown }).host : args[1];
    const loopback =
      typeof host !== 'string' || !net.isIP(host) || classifyAddress(host)?.categories.includes('loopback');
    if (!loopback) throw new Error(`test fence: no connection to ${String(host)}`);
    return realConnect.apply(this, args as Parameters<typeof realConnect>);
  });
});
afterAll(() => vi.restoreAllMocks());

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A loopback server that answers the well-known path as `body` says; it records each request. */
async function instance(
  body: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  host = '127.0.0.1',
  port = 0,
) {
  const requests: { path: string | undefined; host: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url, host: req.headers.host });
    body(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { port: (server.address() as AddressInfo).port, requests };
}
const answersAs = (id: string) => (_req: http.IncomingMessage, res: http.ServerResponse) =>
  res
    .writeHead(200, { 'Content-Type': 'application/json' })
    .end(JSON.stringify({ instance_id: id, version: '0.1.0' }));

const byName = (result: TunnelUrlValidation) => Object.fromEntries(result.checks.map((c) => [c.name, c]));
const failedNames = (result: TunnelUrlValidation) => result.checks.filter((c) => !c.ok).map((c) => c.name);

describe('validateTunnelUrl', () => {
  it('is reachable when the URL answers as this very instance', async () => {
    const { port, requests } = await instance(answersAs(INSTANCE));
    const result = await validateTunnelUrl(`http://127.0.0.1:${port}`, {
      allowPrivate: true,
      instanceId: INSTANCE,
    });
    expect(result).toMatchObject({ url: `http://127.0.0.1:${port}/`, valid: true, reachable: true });
    expect(result.checks.map((c) => c.name)).toEqual([...CHECK_NAMES]);
    expect(failedNames(result)).toEqual([]);
    expect(byName(result).instance.detail).toBe('answered as this instance, version 0.1.0');
    expect(requests).toEqual([{ path: WELL_KNOWN_PATH, host: `127.0.0.1:${port}` }]);
  });

  it('asks the origin of a URL with a path, resolving the name once for the check and the request', async () => {
    const { port, requests } = await instance(answersAs(INSTANCE));
    const lookup = names({ 'tunnel.test': ['127.0.0.1'] });
    const result = await validateTunnelUrl(`HTTP://Tunnel.Test:${port}/base/path`, {
      allowPrivate: false,
      instanceId: INSTANCE,
      policy: onlyFirstLoopback,
      lookup,
    });
    expect(result).toMatchObject({
      url: `http://tunnel.test:${port}/base/path`,
      valid: true,
      reachable: true,
    });
    expect(requests).toEqual([{ path: WELL_KNOWN_PATH, host: `tunnel.test:${port}` }]);
    expect(lookup.calls).toEqual(['tunnel.test']);
    expect(byName(result).resolve.detail).toBe('tunnel.test resolved to 127.0.0.1');
    expect(byName(result).address.detail).toBe('allowed: 127.0.0.1 (public); connecting to 127.0.0.1');
  });

  it('does not let a rebinding resolver move the connection after the address check', async () => {
    const good = await instance(answersAs(INSTANCE));
    const rebound = await instance(answersAs(INSTANCE), '127.0.0.2', good.port);
    let calls = 0;
    const lookup: HostLookup = () =>
      Promise.resolve([{ address: ++calls === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }]);
    const options = { allowPrivate: false, instanceId: INSTANCE, policy: onlyFirstLoopback, lookup };
    const result = await validateTunnelUrl(`http://rebind.test:${good.port}/`, options);
    expect(result).toMatchObject({ valid: true, reachable: true });
    expect(calls).toBe(1);
    expect(good.requests).toHaveLength(1);
    expect(rebound.requests).toEqual([]);
  });

  it('is valid but not reachable when another instance, or something else, answers', async () => {
    const cases: [(req: http.IncomingMessage, res: http.ServerResponse) => void, string, string][] = [
      [answersAs('someone-else'), 'instance', 'answered as another instance (someone-else)'],
      [(_q, s) => s.end('<html>hello</html>'), 'instance', 'the answer is not JSON'],
      [(_q, s) => s.end('{"version":"1"}'), 'instance', 'the answer has no instance_id'],
      [(_q, s) => s.end('null'), 'instance', 'the answer has no instance_id'],
      [(_q, s) => s.writeHead(404).end(), 'response', 'answered 404, not 200: not a stack orchestrator'],
    ];
    for (const [handler, check, detail] of cases) {
      const { port } = await instance(handler);
      const result = await validateTunnelUrl(`http://127.0.0.1:${port}/`, {
        allowPrivate: true,
        instanceId: INSTANCE,
      });
      expect(result).toMatchObject({ valid: true, reachable: false });
      expect(failedNames(result)).toEqual(check === 'response' ? ['response', 'instance'] : ['instance']);
      expect(byName(result)[check].detail).toContain(detail);
    }
  });

  it('reads no more than the body cap', async () => {
    const { port } = await instance((_q, s) =>
      s.end(JSON.stringify({ instance_id: INSTANCE, pad: 'x'.repeat(2_000_000) })),
    );
    const result = await validateTunnelUrl(`http://127.0.0.1:${port}/`, {
      allowPrivate: true,
      instanceId: INSTANCE,
      maxBodyBytes: 1024,
    });
    expect(result).toMatchObject({ valid: true, reachable: false });
    expect(byName(result).response.detail).toBe(
      `http://127.0.0.1:${port}${WELL_KNOWN_PATH} answered more than 1024 bytes: not read further`,
    );
  });

  it('answers within its deadline when the server or the resolver never does', async () => {
    const { port } = await instance(() => {});
    const options = { allowPrivate: true, instanceId: INSTANCE, timeoutMs: 200 };
    const silent = await validateTunnelUrl(`http://127.0.0.1:${port}/`, options);
    expect(silent).toMatchObject({ valid: true, reachable: false });
    expect(byName(silent).response.detail).toBe('no complete answer within 200 ms');
    const hanging = await validateTunnelUrl('http://slow.test/', {
      ...options,
      lookup: () => new Promise(() => {}),
    });
    expect(hanging).toMatchObject({ valid: false, reachable: false });
    expect(byName(hanging).resolve.detail).toBe('lookup of slow.test: no complete answer within 200 ms');
  }, 10_000);

  it('refuses a redirect from an allowed address to a forbidden one, and never connects there', async () => {
    const inside = await instance(answersAs(INSTANCE), '127.0.0.2');
    const { port } = await instance((_q, s) =>
      s.writeHead(302, { Location: `http://127.0.0.2:${inside.port}${WELL_KNOWN_PATH}` }).end(),
    );
    const options = { allowPrivate: false, instanceId: INSTANCE, policy: onlyFirstLoopback, lookup: noNames };
    const result = await validateTunnelUrl(`http://127.0.0.1:${port}/`, options);
    expect(result).toMatchObject({ valid: true, reachable: false });
    expect(failedNames(result)).toEqual(['redirects', 'response', 'instance']);
    expect(byName(result).redirects.detail).toMatch(
      /^redirect 1 to http:\/\/127\.0\.0\.2:\d+\/\S+ refused: 127\.0\.0\.2 is loopback/,
    );
    expect(inside.requests).toEqual([]);
  });

  it('follows an allowed redirect and says so', async () => {
    const second = await instance(answersAs(INSTANCE));
    const first = await instance((_q, s) =>
      s.writeHead(308, { Location: `http://second.test:${second.port}${WELL_KNOWN_PATH}` }).end(),
    );
    const lookup = names({ 'first.test': ['127.0.0.1'], 'second.test': ['127.0.0.1'] });
    const result = await validateTunnelUrl(`http://first.test:${first.port}/`, {
      allowPrivate: true,
      instanceId: INSTANCE,
      lookup,
    });
    expect(result).toMatchObject({ valid: true, reachable: true });
    expect(byName(result).redirects.detail).toBe(
      `followed 1: http://first.test:${first.port}${WELL_KNOWN_PATH} -> http://second.test:${second.port}${WELL_KNOWN_PATH}`,
    );
    expect(lookup.calls).toEqual(['first.test', 'second.test']);
  });

  it('refuses loopback, private, link-local, CGNAT, multicast and unspecified targets unless allowed', async () => {
    const lookup = names({ 'localhost.test': ['127.0.0.1', '::1'], 'internal.test': ['10.1.2.3'] });
    const matrix: [string, string][] = [
      ['http://127.0.0.1/', '127.0.0.1 is loopback'],
      ['http://127.255.255.254:8080/', 'is loopback'],
      ['http://[::1]/', '::1 is loopback'],
      ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1 is ipv4-mapped, loopback'],
      ['http://[64:ff9b::127.0.0.1]/', 'is loopback'],
      ['http://2130706433/', '127.0.0.1 is loopback'],
      ['http://0x7f.1/', '127.0.0.1 is loopback'],
      ['http://0177.0.0.1/', '127.0.0.1 is loopback'],
      ['http://localhost.test/', '127.0.0.1 is loopback'],
      ['http://10.0.0.1/', 'is private'],
      ['http://172.31.255.255/', 'is private'],
      ['http://192.168.0.1/', 'is private'],
      ['http://[fd12:3456::1]/', 'is private'],
      ['http://internal.test/', '10.1.2.3 is private'],
      ['http://169.254.0.1/', 'is link-local'],
      ['http://[fe80::1]/', 'is link-local'],
      ['http://100.64.0.1/', 'is cgnat'],
      ['http://[::ffff:10.0.0.1]/', 'is ipv4-mapped, private'],
    ];
    for (const [url, reason] of matrix) {
      const refused = await validateTunnelUrl(url, {
        allowPrivate: false,
        instanceId: INSTANCE,
        lookup,
        timeoutMs: 500,
      });
      expect(refused, url).toMatchObject({ valid: false, reachable: false });
      expect(failedNames(refused), url).toEqual(['address', 'redirects', 'response', 'instance']);
      expect(byName(refused).address.detail, url).toContain(reason);
      expect(byName(refused).response.detail).toBe('skipped: the address check failed');
    }
    for (const url of [
      'http://224.0.0.1/',
      'http://[ff02::1]/',
      'http://0.0.0.0/',
      'http://0/',
      'http://[::]/',
    ]) {
      const refused = await validateTunnelUrl(url, {
        allowPrivate: true,
        instanceId: INSTANCE,
        lookup,
        timeoutMs: 500,
      });
      expect(refused, url).toMatchObject({ valid: false });
      expect(byName(refused).address.detail, url).toMatch(/is (multicast|unspecified)$/);
    }
  });

  it('refuses cloud metadata addresses even when private URLs are allowed', async () => {
    const lookup = names({ 'metadata.test': ['169.254.169.254'] });
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://169.254.170.2/',
      'http://100.100.100.200/',
      'http://168.63.129.16/',
      'http://[::ffff:169.254.169.254]/',
      'http://metadata.test/',
    ];
    for (const url of urls) {
      const refused = await validateTunnelUrl(url, {
        allowPrivate: true,
        instanceId: INSTANCE,
        lookup,
        timeoutMs: 500,
      });
      expect(refused, url).toMatchObject({ valid: false, reachable: false });
      expect(byName(refused).address.detail, url).toMatch(/metadata$/);
    }
  });

  it('refuses credentials and other schemes without connecting', async () => {
    const { port, requests } = await instance(answersAs(INSTANCE));
    const cases: [string, string][] = [
      [`http://user:pw@127.0.0.1:${port}/`, 'credentials'],
      [`http://user@127.0.0.1:${port}/`, 'credentials'],
      [`ftp://127.0.0.1:${port}/`, 'scheme'],
      ['file:///etc/passwd', 'scheme'],
      ['javascript:alert(1)', 'scheme'],
      [`gopher://127.0.0.1:${port}/`, 'scheme'],
    ];
    for (const [url, check] of cases) {
      const result = await validateTunnelUrl(url, {
        allowPrivate: true,
        instanceId: INSTANCE,
        lookup: noNames,
      });
      expect(result, url).toMatchObject({ valid: false, reachable: false });
      expect(failedNames(result)[0], url).toBe(check);
      expect(byName(result).resolve.detail).toBe(`skipped: the ${check} check failed`);
    }
    expect(requests).toEqual([]);
  });

  it('never throws, and always answers every check', async () => {
    const inputs: unknown[] = [
      undefined,
      null,
      7,
      {},
      '',
      'x'.repeat(100_000),
      'http://exa\u0000mple.test/',
      'http://[::1/',
    ];
    const throwingPolicy: AddressPolicy = () => {
      throw new Error('policy broke');
    };
    for (const input of inputs) {
      const result = await validateTunnelUrl(input, {
        allowPrivate: false,
        instanceId: INSTANCE,
        lookup: noNames,
      });
      expect(result.checks.map((c) => c.name)).toEqual([...CHECK_NAMES]);
      expect(result).toMatchObject({ url: null, valid: false, reachable: false });
    }
    const throwingLookup: HostLookup = () => {
      throw new Error('resolver broke');
    };
    const viaLookup = await validateTunnelUrl('http://a.test/', {
      allowPrivate: false,
      instanceId: INSTANCE,
      lookup: throwingLookup,
    });
    expect(byName(viaLookup).resolve).toEqual({
      name: 'resolve',
      ok: false,
      detail: 'a.test does not resolve: resolver broke',
    });
    const viaPolicy = await validateTunnelUrl('http://127.0.0.1/', {
      allowPrivate: false,
      instanceId: INSTANCE,
      policy: throwingPolicy,
    });
    expect(viaPolicy.checks.map((c) => c.name)).toEqual([...CHECK_NAMES]);
    expect(byName(viaPolicy).resolve.detail).toBe('unexpected error: Error: policy broke');
  });
});
