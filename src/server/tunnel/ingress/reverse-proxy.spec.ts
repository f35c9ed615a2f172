import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BASE_DOMAIN,
  LoopbackServers,
  SERVICE_HOST,
  deferred,
  send,
  target,
} from '../../../../test/support/ingress.js';

const servers = new LoopbackServers();
afterEach(() => servers.close());

/** An upstream that answers with what it received. */
function echoUpstream(): Promise<number> {
  return servers.upstream((req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          bytes,
          sha256: hash.digest('hex'),
        }),
      );
    });
  });
}

function problemOf(body: Buffer): Record<string, unknown> {
  return JSON.parse(body.toString()) as Record<string, unknown>;
}

describe('IngressProxy.handle', () => {
  it('forwards a GET with its path and query, the original Host and the X-Forwarded headers', async () => {
    const front = await servers.front({ [SERVICE_HOST]: target(await echoUpstream()) });
    const got = await send(front.port, {
      path: '/a/b?x=1&y=%20z',
      headers: { authorization: 'Bearer t', cookie: 'sid=1' },
    });
    expect(got.status).toBe(200);
    const seen = JSON.parse(got.body.toString());
    expect(seen.method).toBe('GET');
    expect(seen.url).toBe('/a/b?x=1&y=%20z');
    expect(seen.headers).toMatchObject({
      host: SERVICE_HOST,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': SERVICE_HOST,
      authorization: 'Bearer t',
      cookie: 'sid=1',
    });
    await Promise.all(front.settled);
  });

  it('leaves requests for other hosts to the API', async () => {
    const front = await servers.front({ [SERVICE_HOST]: target(await echoUpstream()) });
    const got = await send(front.port, { headers: { host: `b1.${BASE_DOMAIN}` } });
    expect(got.body.toString()).toBe('api');
    expect(front.settled).toHaveLength(0);
  });

  it('appends to X-Forwarded-For and replaces X-Forwarded-Host; a relay may say the client used https', async () => {
    const front = await servers.front({ [SERVICE_HOST]: target(await echoUpstream()) });
    const got = await send(front.port, {
      headers: {
        'x-forwarded-for': '203.0.113.7, 198.51.100.2',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'spoofed.example',
      },
    });
    const seen = JSON.parse(got.body.toString());
    expect(seen.headers['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.2, 127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('https');
    expect(seen.headers['x-forwarded-host']).toBe(SERVICE_HOST);
  });

  it.each([
    ['with a Content-Length', true],
    ['chunked', false],
  ])('streams a 5 MB request body %s to the service intact', async (_how, withLength) => {
    const front = await servers.front({ [SERVICE_HOST]: target(await echoUpstream()) });
    const body = randomBytes(5 * 1024 * 1024);
    const seen = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: front.port,
          method: 'POST',
          agent: false,
          headers: { host: SERVICE_HOST, ...(withLength ? { 'content-length': String(body.length) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
        },
      );
      req.on('error', reject);
      for (let offset = 0; offset < body.length; offset += 64 * 1024)
        req.write(body.subarray(offset, offset + 64 * 1024));
      req.end();
    });
    expect(seen.bytes).toBe(body.length);
    expect(seen.sha256).toBe(createHash('sha256').update(body).digest('hex'));
    const headers = seen.headers as Record<string, string>;
    if (withLength) expect(headers['content-length']).toBe(String(body.length));
    else expect(headers['transfer-encoding']).toBe('chunked');
  });

  it('delivers the first chunk of a streamed response before the service ends it', async () => {
    const firstArrived = deferred();
    const events: string[] = [];
    const port = await servers.upstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('first;');
      // The service only ends after the client has seen the first chunk: a proxy that buffered
      // the response would never deliver it, and this test would hang instead of passing.
      void firstArrived.promise.then(() => {
        events.push('service ends');
        res.end('second');
      });
    });
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const body = await new Promise<string>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: front.port, agent: false, headers: { host: SERVICE_HOST } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            if (text === 'first;') {
              events.push('client has first chunk');
              firstArrived.resolve();
            }
          });
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
    });
    expect(body).toBe('first;second');
    expect(events).toEqual(['client has first chunk', 'service ends']);
  });

  it('drops hop-by-hop headers in both directions and keeps end-to-end ones', async () => {
    let seen: http.IncomingHttpHeaders = {};
    const port = await servers.upstream((req, res) => {
      seen = req.headers;
      res.setHeader('Connection', 'x-up-secret');
      res.setHeader('X-Up-Secret', 'internal');
      res.setHeader('Keep-Alive', 'timeout=99');
      res.setHeader('Proxy-Authenticate', 'Basic realm="worker"');
      res.setHeader('Trailer', 'X-Checksum');
      res.setHeader('Upgrade', 'h2c');
      res.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2; Path=/']);
      res.setHeader('X-Kept', 'yes');
      res.end('ok');
    });
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const got = await send(front.port, {
      headers: {
        connection: 'close, x-secret',
        'x-secret': 'do not forward',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic cHJveHk6cHc=',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        // Node's client only sends a Trailer header with a chunked body.
        'transfer-encoding': 'chunked',
        trailer: 'X-Checksum',
        upgrade: 'h2c',
        expect: '100-continue',
        'x-kept': 'yes',
      },
      body: Buffer.from('body'),
    });
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe('ok');
    for (const name of [
      'x-secret',
      'keep-alive',
      'proxy-authorization',
      'proxy-connection',
      'te',
      'trailer',
      'upgrade',
      'expect',
    ])
      expect(seen, name).not.toHaveProperty(name);
    // Node's client sets its own Connection for the hop to the service: keep-alive, the pool's.
    expect(seen.connection).toBe('keep-alive');
    expect(seen['x-kept']).toBe('yes');
    for (const name of ['x-up-secret', 'keep-alive', 'proxy-authenticate', 'trailer', 'upgrade'])
      expect(got.headers, name).not.toHaveProperty(name);
    expect(got.headers.connection).toBe('close');
    expect(got.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(got.headers['x-kept']).toBe('yes');
  });

  it('answers 404 problem+json for a subdomain with no published service', async () => {
    const front = await servers.front({});
    const got = await send(front.port, {
      path: '/x?y=1',
      headers: { host: `nothing-here.b1.${BASE_DOMAIN}:443` },
    });
    expect(got.status).toBe(404);
    expect(got.headers['content-type']).toBe('application/problem+json');
    expect(got.headers['cache-control']).toBe('no-store');
    expect(problemOf(got.body)).toEqual({
      type: 'urn:stack-orchestrator:problem:subdomain_not_found',
      title: 'Not Found',
      status: 404,
      detail: `No service is published at nothing-here.b1.${BASE_DOMAIN}.`,
      instance: '/x',
      code: 'subdomain_not_found',
      request_id: got.headers['x-request-id'],
    });
  });

  it('answers 502 problem+json naming the service, not its address, when the service is down', async () => {
    const port = await servers.closedPort();
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const got = await send(front.port, { method: 'POST', body: Buffer.from('payload') });
    expect(got.status).toBe(502);
    expect(got.headers['content-type']).toBe('application/problem+json');
    const problem = problemOf(got.body);
    expect(problem).toMatchObject({ status: 502, code: 'service_unavailable', title: 'Bad Gateway' });
    expect(problem.detail).toContain('Service web of stack shop');
    expect(JSON.stringify(problem)).not.toContain('127.0.0.1');
    expect(JSON.stringify(problem)).not.toContain(String(port));
    expect(front.warnings).toEqual([expect.objectContaining({ service: 'web', error_code: 'ECONNREFUSED' })]);
  });

  it('answers 502 problem+json when connecting to the worker takes longer than connectTimeoutMs', async () => {
    const port = await servers.unansweredPort();
    const front = await servers.front({ [SERVICE_HOST]: target(port) }, { connectTimeoutMs: 200 });
    const got = await send(front.port);
    expect(got.status).toBe(502);
    expect(problemOf(got.body)).toMatchObject({ code: 'service_unavailable' });
    expect(front.warnings).toEqual([expect.objectContaining({ service: 'web', error_code: 'ETIMEDOUT' })]);
  });

  it('answers 503 problem+json when the lookup itself fails', async () => {
    const front = await servers.front({ [SERVICE_HOST]: new Error('database down') });
    const got = await send(front.port);
    expect(got.status).toBe(503);
    expect(problemOf(got.body)).toMatchObject({ status: 503, code: 'unavailable' });
    expect(front.warnings).toEqual([expect.objectContaining({ msg: 'ingress lookup failed' })]);
  });

  it('aborts the client response when the service resets mid-response, and keeps serving', async () => {
    const port = await servers.upstream((req, res) => {
      if (req.url === '/after') return res.end('still here');
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial', () => res.socket?.resetAndDestroy());
    });
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const outcome = await new Promise<{ text: string; complete: boolean; error?: string }>((resolve) => {
      http.get(
        { host: '127.0.0.1', port: front.port, agent: false, headers: { host: SERVICE_HOST } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('error', (err: NodeJS.ErrnoException) =>
            resolve({ text, complete: res.complete, error: err.code }),
          );
          res.on('end', () => resolve({ text, complete: res.complete }));
        },
      );
    });
    expect(outcome.complete).toBe(false);
    expect(outcome.error).toBe('ECONNRESET');
    expect('partial'.startsWith(outcome.text)).toBe(true);
    expect((await send(front.port, { path: '/after' })).body.toString()).toBe('still here');
    await Promise.all(front.settled);
  });

  it('closes the connection to the service when the client goes away mid-response', async () => {
    const serviceSawClose = deferred<boolean>();
    const port = await servers.upstream((_req, res) => {
      res.writeHead(200);
      res.write('tick');
      res.once('close', () => serviceSawClose.resolve(res.writableFinished));
    });
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const req = http.get(
      { host: '127.0.0.1', port: front.port, agent: false, headers: { host: SERVICE_HOST } },
      (res) => res.once('data', () => req.destroy()),
    );
    req.on('error', () => undefined);
    expect(await serviceSawClose.promise).toBe(false);
    await Promise.all(front.settled);
    expect(front.warnings).toEqual([]);
  });

  it('closes the connection to the service when the client goes away mid-upload', async () => {
    const firstPart = deferred();
    const serviceSawClose = deferred<boolean>();
    const port = await servers.upstream((req) => {
      req.once('data', () => firstPart.resolve());
      req.once('close', () => serviceSawClose.resolve(req.complete));
    });
    const front = await servers.front({ [SERVICE_HOST]: target(port) });
    const req = http.request({
      host: '127.0.0.1',
      port: front.port,
      method: 'PUT',
      agent: false,
      headers: { host: SERVICE_HOST, 'content-length': '1000000' },
    });
    req.on('error', () => undefined);
    req.write('the first part of a long upload');
    await firstPart.promise;
    req.destroy();
    expect(await serviceSawClose.promise).toBe(false);
    await Promise.all(front.settled);
    expect(front.warnings).toEqual([]);
  });
});
