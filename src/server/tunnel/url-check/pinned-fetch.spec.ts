import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type AddressPolicy, createAddressPolicy } from './address-policy.js';
import { type HostLookup, pinnedFetch } from './pinned-fetch.js';

const strict = createAddressPolicy({ allowPrivate: false });
/** The real policy, except that 127.0.0.1 stands in for a public address: tests stay on loopback. */
const onlyFirstLoopback: AddressPolicy = (address) =>
  address === '127.0.0.1' ? { allowed: true, categories: [] } : strict(address);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function listen(server: http.Server | https.Server, host = '127.0.0.1', port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

function serve(handler: http.RequestListener, host?: string, port?: number) {
  const seen: { url: string; host: string | undefined; local: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', host: req.headers.host, local: req.socket.localAddress });
    handler(req, res);
  });
  return listen(server, host, port).then((p) => ({ port: p, seen }));
}

/** A lookup that answers from a table and counts its calls per name. */
function tableLookup(table: Record<string, string[]>): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = (hostname: string) => {
    calls.push(hostname);
    const answers = table[hostname];
    if (answers === undefined)
      return Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
    return Promise.resolve(answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
  return Object.assign(lookup, { calls });
}

describe('pinnedFetch', () => {
  it('connects to the resolved address, with the name in Host, resolving it once', async () => {
    const { port, seen } = await serve((_req, res) => res.end('hello'));
    const lookup = tableLookup({ 'public.test': ['127.0.0.1'] });
    const result = await pinnedFetch(new URL(`http://public.test:${port}/x?y=1`), {
      policy: onlyFirstLoopback,
      lookup,
    });
    expect(result).toMatchObject({ ok: true, status: 200, truncated: false });
    expect(result.ok && result.body.toString()).toBe('hello');
    expect(seen).toEqual([{ url: '/x?y=1', host: `public.test:${port}`, local: '127.0.0.1' }]);
    expect(lookup.calls).toEqual(['public.test']);
  });

  it('uses the first answer for every request to a host: a rebinding resolver gets no second chance', async () => {
    const first = await serve((req, res) => {
      if (req.url === '/a') res.writeHead(302, { Location: '/b' }).end();
      else if (req.url === '/b') res.writeHead(307, { Location: `http://public.test:${first.port}/c` }).end();
      else res.end('pinned');
    });
    // The address a rebinding answer would point at, on the same port: it must never be reached.
    const rebound = await serve((_req, res) => res.end('rebound'), '127.0.0.2', first.port);
    let calls = 0;
    const lookup: HostLookup = (hostname) => {
      calls++;
      expect(hostname).toBe('public.test');
      return Promise.resolve([{ address: calls === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }]);
    };
    const allowBoth: AddressPolicy = () => ({ allowed: true, categories: [] });
    const result = await pinnedFetch(new URL(`http://public.test:${first.port}/a`), {
      policy: allowBoth,
      lookup,
    });
    expect(result.ok && result.body.toString()).toBe('pinned');
    expect(calls).toBe(1);
    expect(first.seen.map((s) => s.url)).toEqual(['/a', '/b', '/c']);
    expect(rebound.seen).toEqual([]);
  });

  it('refuses a redirect to a forbidden address and never connects there', async () => {
    const forbidden = await serve((_req, res) => res.end('internal'), '127.0.0.2');
    const { port } = await serve((_req, res) =>
      res.writeHead(302, { Location: `http://127.0.0.2:${forbidden.port}/` }).end(),
    );
    const result = await pinnedFetch(new URL(`http://127.0.0.1:${port}/`), { policy: onlyFirstLoopback });
    expect(result).toMatchObject({ ok: false, stage: 'redirect' });
    expect(!result.ok && result.detail).toBe(
      `redirect 1 to http://127.0.0.2:${forbidden.port}/ refused: 127.0.0.2 is loopback (allowed only with TUNNEL_ALLOW_PRIVATE_URLS=true)`,
    );
    expect(forbidden.seen).toEqual([]);
  });

  it('resolves a redirect target name once and refuses it when it leads somewhere forbidden', async () => {
    const forbidden = await serve((_req, res) => res.end('internal'), '127.0.0.2');
    const { port } = await serve((_req, res) =>
      res.writeHead(301, { Location: `http://inside.test:${forbidden.port}/` }).end(),
    );
    const lookup = tableLookup({ 'public.test': ['127.0.0.1'], 'inside.test': ['127.0.0.2'] });
    const result = await pinnedFetch(new URL(`http://public.test:${port}/`), {
      policy: onlyFirstLoopback,
      lookup,
    });
    expect(result).toMatchObject({ ok: false, stage: 'redirect' });
    expect(lookup.calls).toEqual(['public.test', 'inside.test']);
    expect(forbidden.seen).toEqual([]);
  });

  it('refuses redirects to other schemes, to credentials, without a location, and past the limit', async () => {
    const targets: Record<string, string | undefined> = {
      '/file': 'file:///etc/passwd',
      '/creds': 'http://user:pw@127.0.0.1/',
      '/none': undefined,
    };
    const { port, seen } = await serve((req, res) => {
      const url = req.url ?? '';
      if (url.startsWith('/loop')) res.writeHead(302, { Location: `/loop${seen.length}` }).end();
      else res.writeHead(302, targets[url] === undefined ? {} : { Location: targets[url] }).end();
    });
    const fetch = (path: string) =>
      pinnedFetch(new URL(`http://127.0.0.1:${port}${path}`), { policy: onlyFirstLoopback });
    expect(await fetch('/file')).toMatchObject({
      stage: 'redirect',
      detail: expect.stringMatching(/scheme file:/),
    });
    expect(await fetch('/creds')).toMatchObject({
      stage: 'redirect',
      detail: expect.stringMatching(/credentials/),
    });
    expect(await fetch('/none')).toMatchObject({
      stage: 'request',
      detail: 'answered 302 without a Location header',
    });
    seen.length = 0;
    expect(await fetch('/loop')).toMatchObject({ stage: 'redirect', detail: 'more than 3 redirects' });
    expect(seen).toHaveLength(4);
  });

  it('refuses a name when any of its addresses is forbidden, before connecting anywhere', async () => {
    const { port, seen } = await serve((_req, res) => res.end('x'));
    const lookup = tableLookup({ 'mixed.test': ['127.0.0.1', '127.0.0.2'] });
    const result = await pinnedFetch(new URL(`http://mixed.test:${port}/`), {
      policy: onlyFirstLoopback,
      lookup,
    });
    expect(result).toMatchObject({
      ok: false,
      stage: 'address',
      detail: expect.stringMatching(/^127\.0\.0\.2 is loopback/),
    });
    expect(seen).toEqual([]);
  });

  it('reports a name that does not resolve, and a resolver answering garbage', async () => {
    const missing = await pinnedFetch(new URL('http://missing.test/'), {
      policy: strict,
      lookup: tableLookup({}),
    });
    expect(missing).toMatchObject({
      stage: 'resolve',
      detail: 'missing.test does not resolve: ENOTFOUND: not found',
    });
    const garbage: HostLookup = () => Promise.resolve([{ address: 'localhost', family: 4 }]);
    expect(await pinnedFetch(new URL('http://g.test/'), { policy: strict, lookup: garbage })).toMatchObject({
      stage: 'resolve',
      detail: 'g.test resolved to something that is not an IP address',
    });
    const empty: HostLookup = () => Promise.resolve([]);
    expect(await pinnedFetch(new URL('http://e.test/'), { policy: strict, lookup: empty })).toMatchObject({
      stage: 'resolve',
      detail: 'e.test resolved to no address',
    });
  });

  it('reads at most maxBodyBytes and closes the connection', async () => {
    let finished: boolean | undefined;
    const { port } = await serve((_req, res) => {
      res.on('close', () => (finished = res.writableFinished));
      const chunk = Buffer.alloc(64 * 1024, 'a');
      Readable.from(
        (function* () {
          for (let i = 0; i < 1024; i++) yield chunk;
        })(),
      ).pipe(res);
    });
    const result = await pinnedFetch(new URL(`http://127.0.0.1:${port}/`), {
      policy: onlyFirstLoopback,
      maxBodyBytes: 100_000,
    });
    // Compared field by field: a failure message holding a 64 MiB body would take minutes to print.
    const summary = result.ok ? [result.status, result.truncated, result.body.length] : result.detail;
    expect(summary).toEqual([200, true, 100_000]);
    await expect.poll(() => finished, { timeout: 5000 }).toBe(false);
  });

  it('gives up at the deadline: no answer, a body that never ends, a resolver that never answers', async () => {
    const { port } = await serve((req, res) => {
      if (req.url === '/trickle') res.write('{"instance_id":');
    });
    const options = { policy: onlyFirstLoopback, timeoutMs: 200 };
    const silent = await pinnedFetch(new URL(`http://127.0.0.1:${port}/silent`), options);
    expect(silent).toMatchObject({ ok: false, stage: 'timeout', detail: 'no complete answer within 200 ms' });
    const trickle = await pinnedFetch(new URL(`http://127.0.0.1:${port}/trickle`), options);
    expect(trickle).toMatchObject({
      ok: false,
      stage: 'timeout',
      detail: 'no complete answer within 200 ms',
    });
    const never: HostLookup = () => new Promise(() => {});
    const lookup = await pinnedFetch(new URL('http://slow.test/'), { ...options, lookup: never });
    expect(lookup).toMatchObject({ ok: false, stage: 'timeout', detail: 'no complete answer within 200 ms' });
  }, 10_000);

  it('reports a refused connection', async () => {
    const { port } = await serve(() => {});
    await closers.pop()?.();
    const result = await pinnedFetch(new URL(`http://127.0.0.1:${port}/`), { policy: onlyFirstLoopback });
    expect(result).toMatchObject({
      ok: false,
      stage: 'request',
      detail: expect.stringMatching(/ECONNREFUSED/),
    });
  });

  it('over https, sends the name as SNI to the pinned address and verifies the certificate', async () => {
    const names: string[] = [];
    const { cert, key } = await selfSigned('public.test');
    const server = https.createServer({
      cert,
      key,
      SNICallback: (servername, done) => {
        names.push(servername);
        done(null, undefined);
      },
    });
    const port = await listen(server);
    const lookup = tableLookup({ 'public.test': ['127.0.0.1'] });
    const result = await pinnedFetch(new URL(`https://public.test:${port}/`), {
      policy: onlyFirstLoopback,
      lookup,
    });
    expect(result).toMatchObject({
      ok: false,
      stage: 'request',
      detail: expect.stringMatching(/self-signed|SELF_SIGNED/i),
    });
    expect(names).toEqual(['public.test']);
  });
});

async function selfSigned(name: string): Promise<{ cert: string; key: string }> {
  x509.cryptoProvider.set(webcrypto as never);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 3_600_000),
    signingAlgorithm: alg,
    keys,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: name }])],
  });
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const key = `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n`;
  return { cert: cert.toString('pem'), key };
}
