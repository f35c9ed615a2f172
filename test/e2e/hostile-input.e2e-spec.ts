import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import { encodeCursor } from '../../src/server/common/pagination.js';
import { startTestApp, type TestApp } from '../support/app.js';

/** Inputs that once reached a 500 or a crash (review findings); each must be a 4xx and change nothing. */
describe('hostile input', () => {
  let t: TestApp;
  let joinToken: string;
  beforeAll(async () => {
    t = await startTestApp();
    const res = await t.http
      .post('/api/v1/orchestrator/join-tokens')
      .set('Authorization', await t.adminAuth())
      .send({});
    joinToken = res.body.token as string;
  });
  afterAll(() => t.close());

  const enrollBody = (csr: string) => ({
    token: joinToken,
    csr,
    hostname: 'h',
    address: '127.0.0.1',
    os: 'linux',
    arch: 'x64',
    version: '1',
    driver: 'process',
  });

  it('a damaged CSR is a 422 on the public enroll route, and the token is not used', async () => {
    const { csrPem } = await newKeyAndCsr('x');
    const der = Buffer.from(csrPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    // Flip a byte inside the public key point.
    der[40] ^= 0xff;
    const damaged = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    const res = await t.http.post('/api/v1/orchestrator/workers/enroll').send(enrollBody(damaged));
    expect(res.status).toBe(422);
    expect(res.body.errors[0].path).toBe('csr');
    const notPem = await t.http.post('/api/v1/orchestrator/workers/enroll').send(enrollBody('x'.repeat(200)));
    expect(notPem.status).toBe(422);
    const tokens = await t.http
      .get('/api/v1/orchestrator/join-tokens')
      .set('Authorization', await t.adminAuth());
    expect((tokens.body.join_tokens as { uses: number }[])[0].uses).toBe(0);
  });

  it('ids that only look like UUIDs are 4xx, public routes included', async () => {
    const res = await t.http
      .post('/api/v1/orchestrator/workers/enroll/status')
      .send({ worker_id: 'a'.repeat(36), enrollment_secret: 'x' });
    expect(res.status).toBe(422);
    const dashes = await t.http
      .post('/api/v1/orchestrator/workers/enroll/status')
      .send({ worker_id: '-'.repeat(36), enrollment_secret: 'x' });
    expect(dashes.status).toBe(422);
    const get = await t.http
      .get(`/api/v1/orchestrator/workers/${'a'.repeat(36)}`)
      .set('Authorization', await t.adminAuth());
    expect(get.status).toBe(404);
  });

  it('a NUL byte in a field is refused with a 4xx, not a 500', async () => {
    const token = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'client_credentials', client_id: 'a\u0000', client_secret: 'x' });
    expect(token.status).toBeGreaterThanOrEqual(400);
    expect(token.status).toBeLessThan(500);
    const client = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'nul\u0000name', scopes: ['metrics:read'] });
    expect(client.status).toBeGreaterThanOrEqual(400);
    expect(client.status).toBeLessThan(500);
  });

  it('cursors that decode but are not ours are 422', async () => {
    for (const cursor of [
      encodeCursor({ at: '1', id: 'x' }),
      encodeCursor({ at: '2026-01-01T00:00:00.000Z', id: "x' OR 1=1" }),
      'e30',
    ]) {
      const res = await t.http
        .get(`/api/v1/orchestrator/audit?cursor=${cursor}`)
        .set('Authorization', await t.adminAuth());
      expect(res.status, cursor).toBe(422);
    }
  });

  it('deeply nested JSON is a 400, not a stack overflow', async () => {
    const deep = `{"worker_id":"x","enrollment_secret":"y","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const res = await t.http
      .post('/api/v1/orchestrator/workers/enroll/status')
      .set('Content-Type', 'application/json')
      .send(deep);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
    // Brackets inside strings do not count.
    const inString = await t.http
      .post('/api/v1/orchestrator/workers/enroll/status')
      .send({ worker_id: '00000000-0000-4000-8000-000000000000', enrollment_secret: '['.repeat(100) });
    expect(inString.status).toBe(401);
  });

  it('the enrollment answer is not cacheable', async () => {
    const { csrPem } = await newKeyAndCsr('x');
    const res = await t.http.post('/api/v1/orchestrator/workers/enroll').send(enrollBody(csrPem));
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
  });
  it('stacks, jobs and drift routes answer hostile input with a 4xx and change nothing', async () => {
    const auth = await t.adminAuth();
    const get = (path: string) => t.http.get(`/api/v1/orchestrator${path}`).set('Authorization', auth);
    const yaml = `name: hostile\nstackkit: basement-kit\nservices:\n  web:\n    command: ["true"]\n`;
    const created = await t.http
      .post('/api/v1/orchestrator/stacks')
      .set('Authorization', auth)
      .set('Content-Type', 'application/yaml')
      .send(yaml);
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    const checks: [string, Promise<{ status: number }>, number[]][] = [
      ['job id that is not a UUID', get(`/jobs/${'a'.repeat(36)}`), [404]],
      ['job filter that is not a UUID', get('/jobs?stack_id=nope'), [422]],
      ['unknown job status filter', get('/jobs?status=exploded'), [422]],
      ['forged cursor', get(`/jobs?cursor=${encodeCursor({ at: 'x', id: 'y' })}`), [422]],
      ['huge log position', get(`/jobs/${id}/logs?after=${'9'.repeat(30)}`), [400, 404, 422]],
      ['huge revision', get(`/stacks/${id}/revisions/${'9'.repeat(20)}`), [400, 404]],
      ['revision that is not a number', get(`/stacks/${id}/revisions/abc`), [400]],
      [
        // JSON is the {definition, variables, profiles} body (docs/compose.md): a stack itself is not.
        'stack as JSON',
        t.http.post('/api/v1/orchestrator/stacks').set('Authorization', auth).send({ name: 'x' }),
        [422],
      ],
      [
        'variables that are not strings',
        t.http
          .post('/api/v1/orchestrator/stacks')
          .set('Authorization', auth)
          .send({ definition: 'services: {a: {image: busybox}}', variables: { A: 1, 'B C': 'x' } }),
        [422],
      ],
      [
        'a definition as plain text',
        t.http
          .post('/api/v1/orchestrator/stacks')
          .set('Authorization', auth)
          .set('Content-Type', 'text/plain')
          .send('name: x'),
        [415],
      ],
      [
        'an alias bomb as a new revision',
        t.http
          .put(`/api/v1/orchestrator/stacks/${id}`)
          .set('Authorization', auth)
          .set('Content-Type', 'application/yaml')
          .send(
            'a: &a ["x","x","x","x","x","x","x","x","x"]\n' +
              Array.from({ length: 8 }, (_, i) => {
                const prev = String.fromCharCode(97 + i);
                const name = String.fromCharCode(98 + i);
                return `${name}: &${name} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`;
              }).join('\n'),
          ),
        [400],
      ],
      [
        'a NUL byte in a definition',
        t.http
          .put(`/api/v1/orchestrator/stacks/${id}`)
          .set('Authorization', auth)
          .set('Content-Type', 'application/yaml')
          .send(yaml.replace('hostile', 'host\u0000ile')),
        [400, 422],
      ],
      [
        'ignore with thousands of names',
        t.http
          .post(`/api/v1/orchestrator/stacks/${id}/drift/ignore`)
          .set('Authorization', auth)
          .send({ resources: Array.from({ length: 5000 }, (_, i) => `r${i}`) }),
        [422],
      ],
      [
        'ignore nested deep',
        t.http
          .post(`/api/v1/orchestrator/stacks/${id}/drift/ignore`)
          .set('Authorization', auth)
          .set('Content-Type', 'application/json')
          .send(`{"resources":${'['.repeat(100)}${']'.repeat(100)}}`),
        [400],
      ],
    ];
    for (const [what, request, expected] of checks) {
      const res = await request;
      expect(expected, `${what}: ${res.status}`).toContain(res.status);
    }
    const after = await get(`/stacks/${id}`);
    expect(after.body).toMatchObject({ revision: 1, name: 'hostile', status: 'draft' });
    expect((await get(`/stacks/${id}/drift`)).body.ignored_resources).toEqual([]);
  });
});
