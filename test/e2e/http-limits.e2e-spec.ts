import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/app.js';

/** What came back on a raw connection until the service closed it (or `waitMs` passed). */
interface Raw {
  socket: Socket;
  answer: Promise<string>;
}

/**
 * What Node's HTTP server refuses on its own, and what a client sending bodies slowly may hold
 * (docs/api.md, "Limits"): parser errors are problems too, a request must arrive whole within
 * HTTP_REQUEST_TIMEOUT, and bodies being read share HTTP_BODY_BUDGET.
 */
describe('HTTP limits below the routes', () => {
  let t: TestApp;
  let port: number;

  const raw = (data: string): Raw => {
    const socket = connect(port, '127.0.0.1');
    socket.setEncoding('utf8');
    let got = '';
    socket.on('data', (chunk: string) => (got += chunk));
    const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(got)));
    socket.on('error', () => undefined);
    socket.write(data);
    return { socket, answer };
  };
  const status = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
  const problemOf = (answer: string) => {
    expect(answer).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  };

  beforeAll(async () => {
    t = await startTestApp({ env: { HTTP_BODY_BUDGET: '2MiB', HTTP_REQUEST_TIMEOUT: '5s' } });
    port = Number(new URL(t.url).port);
  });
  afterAll(() => t?.close());

  it('answers what the HTTP parser refuses as problems, and closes the connection', async () => {
    const cases: [string, number, string][] = [
      ['GE\u0001T / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'bad_request'],
      [
        `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'headers_too_large',
      ],
      [
        'POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
        400,
        'bad_request',
      ],
      ['GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n', 417, 'expectation_failed'],
    ];
    for (const [request, expected, code] of cases) {
      const answer = await raw(request).answer;
      expect(status(answer), request.slice(0, 40)).toBe(expected);
      expect(problemOf(answer), answer).toMatchObject({ status: expected, code });
    }
    // The service goes on answering.
    await t.http.get('/health/live').expect(200);
  });

  it('a request not received whole within HTTP_REQUEST_TIMEOUT gets 408 and is closed', async () => {
    const started = Date.now();
    const slow = raw(
      'POST /api/v1/orchestrator/stacks HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\nContent-Length: 100\r\n\r\nname:',
    );
    const answer = await slow.answer;
    // Cut at the timeout, give or take Node's check of its connections (a quarter of it).
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect(Date.now() - started).toBeLessThan(9_000);
    expect(status(answer)).toBe(408);
    expect(problemOf(answer)).toMatchObject({ status: 408, code: 'request_timeout' });
  });

  it('bodies being read share HTTP_BODY_BUDGET: past it, 503 with Retry-After before a byte is read', async () => {
    // Two clients declare 1 MiB bodies and send them slowly: the budget (2 MiB) is taken.
    const holders = [0, 1].map(() =>
      raw(
        'POST /api/v1/orchestrator/stacks HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\nContent-Length: 1048576\r\n\r\nname: a',
      ),
    );
    const post = () =>
      t.http.post('/api/v1/orchestrator/stacks').set('Content-Type', 'application/yaml').send('name: b');
    await eventually(async () => (await post()).status === 503, 3_000);
    const refused = await post();
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 503, code: 'overloaded' });
    // Requests without a body are not held back.
    await t.http.get('/health/live').expect(200);
    // The slow clients gone, their share is free again: the next body is read (and the route asks for a token).
    for (const h of holders) h.socket.destroy();
    await eventually(async () => (await post()).status === 401, 3_000);
  });
});
