import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';

const PATHS = ['/api/v1/orchestrator/unifier/validate', '/v1/orchestrator/unifier/validate'];
const PATH = PATHS[0];

const VALID = `name: shop
stackkit: basement-kit
variant: default
services:
  web:
    image: nginx:1.27
    ports: ["8080:80"]
    depends_on: [api]
    health_check: { path: /healthz, port: 8080, interval: 10s }
  api:
    command: [/usr/local/bin/api, --port, "9000"]
    ports: [9000]
    env:
      DATABASE_PASSWORD: \${DATABASE_PASSWORD}
    resources: { cpu: 500m, memory: 256Mi }
    flavour: spicy
monitoring:
  enabled: true
  metrics_store: { retention: 15d, storage: 10Gi }
  dashboard:
    enabled: true
    admin_password: \${GRAFANA_ADMIN_PASSWORD}
  log_store: { enabled: true, retention: 7d }
`;

/** One file with a problem of every category, each on a known line. */
const EVERY_CATEGORY = `name: shop
stackkit: basement-kit
variant: minimal
services:
  Web_Server:
    image: nginx
  worker:
    ports: [8080]
  big:
    image: app
    resources: { cpu: 4 }
  api:
    image: api
    restart: sometimes
monitoring:
  dashboard:
    admin_password: correct-horse-battery-staple
`;

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.status).toBe(status);
  expect(res.body.code).toBe(code);
  expect(res.body.request_id).toBe(res.headers['x-request-id']);
}

describe('POST unifier/validate', () => {
  let t: TestApp;
  let auth: string;
  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
  });
  afterAll(() => t.close());

  const post = (body: string | Buffer, type = 'application/yaml', path = PATH) =>
    t.http.post(path).set('Authorization', auth).set('Content-Type', type).send(body);

  it('answers a valid file with its kit, variant, services in dependency order and warnings', async () => {
    for (const path of PATHS) {
      const res = await post(VALID, 'application/yaml', path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        valid: true,
        format: 'stack',
        stackkit: 'basement-kit',
        variant: 'default',
        services: ['api', 'log-store', 'metrics-store', 'dashboard', 'web'],
        warnings: [
          {
            path: 'services.api.flavour',
            category: 'invalid_value',
            message: 'unknown key "flavour" is ignored',
            line: 16,
            column: 5,
          },
        ],
      });
    }
    // The other YAML media types are accepted too.
    for (const type of [
      'application/x-yaml',
      'text/yaml',
      'text/x-yaml',
      'application/yaml; charset=utf-8',
    ]) {
      expect((await post(VALID, type)).status, type).toBe(200);
    }
  });

  it('reports every category of a parseable invalid file in one 422', async () => {
    const res = await post(EVERY_CATEGORY);
    expectProblem(res, 422, 'validation_failed');
    expect(res.body.title).toBe('Validation failed');
    expect(res.body.detail).toBe('The stack definition has 6 errors.');
    // Sorted by position; the stack-wide total is reported at the services mapping.
    expect(res.body.errors).toEqual([
      {
        path: 'services.Web_Server',
        category: 'invalid_service_name',
        message: expect.stringContaining('DNS label') as string,
        line: 5,
        column: 3,
      },
      {
        path: 'services',
        category: 'resource_constraint',
        message: 'the services request 4.3 cores in total; variant basement-kit/minimal allows 2 cores',
        line: 5,
        column: 3,
      },
      {
        path: 'services.worker.image',
        category: 'missing_required_field',
        message: expect.stringContaining('needs image') as string,
        line: 8,
        column: 5,
      },
      {
        path: 'services.big.resources.cpu',
        category: 'resource_constraint',
        message: 'cpu 4 cores exceeds the 1 core a service may have in variant basement-kit/minimal',
        line: 11,
        column: 23,
      },
      {
        path: 'services.api.restart',
        category: 'invalid_value',
        message: 'restart must be one of always, on-failure, never',
        line: 14,
        column: 14,
      },
      {
        path: 'monitoring.dashboard.admin_password',
        category: 'invalid_value',
        message: expect.stringContaining('environment reference') as string,
        line: 17,
        column: 21,
      },
    ]);
    // The literal password never comes back.
    expect(res.text).not.toContain('correct-horse');

    const kit = await post('name: s\nstackkit: mainframe-kit\nservices:\n  a: { image: x }\n');
    expectProblem(kit, 422, 'validation_failed');
    expect(kit.body.errors).toEqual([
      {
        path: 'stackkit',
        category: 'unsupported_stackkit',
        message:
          'stack kit "mainframe-kit" is not supported; supported stack kits: basement-kit, cloud-kit, modern-homelab',
        line: 2,
        column: 11,
      },
    ]);
  });

  it('answers unparseable YAML with 400 invalid_yaml and its line and column', async () => {
    const res = await post('name: shop\nservices:\n  web:\n    image: [nginx\n  api: x\n');
    expectProblem(res, 400, 'invalid_yaml');
    expect(res.body.title).toBe('Invalid YAML');
    const errors = res.body.errors as { path: string; message: string; line: number; column: number }[];
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ path: '', line: 5, column: 3 });
    expect(res.body.detail).toContain('line 5, column 3');

    const duplicate = await post('name: a\nname: b\n');
    expectProblem(duplicate, 400, 'invalid_yaml');
    expect(duplicate.body.errors).toEqual([
      { path: '', message: 'duplicate key "name"', line: 2, column: 1 },
    ]);

    const tagged = await post('name: !!js/function "function () {}"\n');
    expectProblem(tagged, 400, 'invalid_yaml');
    expect((tagged.body.errors as { message: string }[])[0].message).toBe('unknown tag !!js/function');
  });

  it('refuses an alias bomb with a 4xx instead of expanding it', async () => {
    const lines = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let level = 1; level < 9; level++) {
      const prev = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const res = await post(lines.join('\n'));
    expectProblem(res, 400, 'invalid_yaml');
    expect((res.body.errors as { message: string }[])[0].message).toMatch(/aliases expand/);
    // The service is still answering.
    expect((await post(VALID)).status).toBe(200);
  });

  it('refuses an empty body with 400 and a body over 1 MiB with 413', async () => {
    const empty = await t.http.post(PATH).set('Authorization', auth).set('Content-Type', 'application/yaml');
    expectProblem(empty, 400, 'invalid_yaml');
    expect(empty.body.detail).toMatch(/empty/);

    const big = `${VALID}# ${'x'.repeat(1024 * 1024)}\n`;
    expectProblem(await post(big), 413, 'payload_too_large');
  });

  it('refuses another media type with 415; JSON is the {definition, variables, profiles} body', async () => {
    const res = await post(VALID, 'text/plain');
    expectProblem(res, 415, 'unsupported_media_type');
    expect(res.body.detail).toContain('application/yaml');
    // A JSON body is the definition wrapped with its variables (docs/compose.md): not a definition itself.
    const wrapped = await post(JSON.stringify({ definition: VALID }), 'application/json');
    expect(wrapped.status).toBe(200);
    const bare = await post(JSON.stringify({ name: 'shop', stackkit: 'basement-kit' }), 'application/json');
    expectProblem(bare, 422, 'validation_failed');
    expect((bare.body.errors as { path: string }[]).map((e) => e.path)).toEqual([
      'name',
      'stackkit',
      'definition',
    ]);
  });

  it('needs a token with orchestrator:read', async () => {
    const none = await t.http.post(PATH).set('Content-Type', 'application/yaml').send(VALID);
    expectProblem(none, 401, 'unauthorized');

    const weak = (await t.token(ADMIN, 'tunnel:read')).access_token;
    const forbidden = await t.http
      .post(PATH)
      .set('Authorization', `Bearer ${weak}`)
      .set('Content-Type', 'application/yaml')
      .send(VALID);
    expectProblem(forbidden, 403, 'forbidden');

    const reader = (await t.token(ADMIN, 'orchestrator:read')).access_token;
    const ok = await t.http
      .post(PATH)
      .set('Authorization', `Bearer ${reader}`)
      .set('Content-Type', 'application/yaml')
      .send(VALID);
    expect(ok.status).toBe(200);
  });
});
