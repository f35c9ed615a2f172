import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, type McpClient } from '../support/mcp-client.js';

// Compose files through every write path (HTTP YAML and JSON bodies, MCP), and the export back.
const O = '/api/v1/orchestrator';

const COMPOSE = `
name: shop
services:
  db:
    image: postgres:16-alpine
    environment:
      POSTGRES_PASSWORD: \${DB_PASSWORD:?give DB_PASSWORD}
      POSTGRES_USER: \${DB_USER:-shop}
    volumes: [db-data:/var/lib/postgresql/data]
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U shop"]
      interval: 5s
    container_name: shop-db
  web:
    image: nginx:1.27
    ports: ["8080:80"]
    environment: [ "UPSTREAM=http://db:5432", "API_KEY" ]
    depends_on:
      db: { condition: service_healthy }
    configs:
      - source: site
        target: /etc/nginx/conf.d/default.conf
  debug:
    image: busybox
    profiles: [debug]
volumes:
  db-data:
configs:
  site:
    content: "server { listen 80; }"
`;

describe('Compose files over the API', () => {
  let t: TestApp;
  let auth: string;
  let mcp: McpClient;

  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
    mcp = await connectMcp(t.url, (await t.token()).access_token);
  });
  afterAll(async () => {
    await mcp?.close();
    await t.close();
  });

  const yaml = (method: 'post' | 'put', path: string, body: string) =>
    t.http[method](`${O}${path}`)
      .set('Authorization', auth)
      .set('Content-Type', 'application/yaml')
      .send(body);
  const json = (method: 'post' | 'put', path: string, body: object) =>
    t.http[method](`${O}${path}`)
      .set('Authorization', auth)
      .set('Content-Type', 'application/json')
      .send(body);

  it('validates an unmodified Compose file with its variables, and says it read it as Compose', async () => {
    const res = await json('post', '/unifier/validate', {
      definition: COMPOSE,
      variables: { DB_PASSWORD: 'pw', API_KEY: 'k' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      valid: true,
      format: 'compose',
      stackkit: 'basement-kit',
      variant: 'default',
      services: ['db', 'web'],
    });
    expect((res.body as { warnings: { path: string }[] }).warnings.map((w) => w.path)).toEqual([
      'services.db.container_name',
      'services.debug',
    ]);
  });

  it('answers a 422 with the errors and the warnings both; :? names the variable, never a value', async () => {
    const res = await json('post', '/unifier/validate', {
      definition: COMPOSE.replace('image: busybox', 'image: busybox\n    privileged: true'),
      variables: { API_KEY: 'not-in-any-message' },
      profiles: ['debug'],
    });
    expect(res.status).toBe(422);
    const body = res.body as { errors: { path: string; message: string }[]; warnings: { path: string }[] };
    expect(body.errors.map((e) => e.path)).toEqual(['services.db.environment.POSTGRES_PASSWORD']);
    expect(body.errors[0].message).toContain('give DB_PASSWORD');
    expect(JSON.stringify(body)).not.toContain('not-in-any-message');
    // The schema step stops before our rules: the refusal of privileged comes once the variable is given.
    const second = await json('post', '/unifier/validate', {
      definition: COMPOSE.replace('image: busybox', 'image: busybox\n    privileged: true'),
      variables: { DB_PASSWORD: 'pw' },
      profiles: ['debug'],
    });
    expect(second.status).toBe(422);
    const again = second.body as {
      errors: { path: string; message: string }[];
      warnings: { path: string }[];
    };
    expect(again.errors).toMatchObject([
      { path: 'services.debug.privileged', message: expect.stringMatching(/^privileged is refused/) },
    ]);
    expect(again.warnings.map((w) => w.path)).toEqual([
      'services.db.container_name',
      'services.web.environment.1',
    ]);
  });

  it('creates and replaces a stack from a Compose file; every write path returns the warnings', async () => {
    const created = await json('post', '/stacks', { definition: COMPOSE, variables: { DB_PASSWORD: 'pw' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ name: 'shop', format: 'compose', services: ['db', 'web'] });
    expect((created.body as { warnings: { path: string }[] }).warnings.map((w) => w.path)).toEqual([
      'services.db.container_name',
      'services.web.environment.1',
      'services.debug',
    ]);
    const id = (created.body as { id: string }).id;
    const revision = await t.http.get(`${O}/stacks/${id}/revisions/1`).set('Authorization', auth);
    const db = (revision.body as { definition: { services: { name: string; env: object }[] } }).definition
      .services[0];
    // Interpolated before anything else saw it: the default and the given value.
    expect(db.env).toEqual({ POSTGRES_PASSWORD: 'pw', POSTGRES_USER: 'shop' });

    const replaced = await yaml(
      'put',
      `/stacks/${id}?profiles=debug&format=compose`,
      COMPOSE.replace('${DB_PASSWORD:?give DB_PASSWORD}', 'literal'),
    );
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body).toMatchObject({ revision: 2, services: ['db', 'debug', 'web'] });
    expect((await t.http.get(`${O}/stacks/${id}`).set('Authorization', auth)).body).not.toHaveProperty(
      'warnings',
    );
    expect((await t.http.delete(`${O}/stacks/${id}`).set('Authorization', auth)).status).toBe(202);
  });

  it('takes the name, kit and variant from the query; a name nowhere is a 422 at name', async () => {
    const file = 'services:\n  app: { image: busybox }\n';
    const missing = await yaml('post', '/unifier/validate', file);
    expect(missing.status).toBe(422);
    expect(missing.body).toMatchObject({
      errors: [{ path: 'name', category: 'missing_required_field' }],
      warnings: [],
    });
    const named = await yaml('post', '/stacks?name=from-query&stackkit=cloud-kit&variant=default', file);
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    expect(named.body).toMatchObject({ name: 'from-query', stackkit: 'cloud-kit', format: 'compose' });
    const bad = await yaml('post', '/unifier/validate?format=docker&colour=red', file);
    expect(bad.status).toBe(422);
    expect((bad.body as { errors: { path: string }[] }).errors.map((e) => e.path)).toEqual([
      'query.format',
      'query.colour',
    ]);
    // Our own format is still ours, whatever the query says of Compose.
    const ours = await yaml(
      'post',
      '/unifier/validate?format=stack',
      'name: x\nstackkit: basement-kit\nservices:\n  a: { image: busybox }\n',
    );
    expect(ours.body).toMatchObject({ valid: true, format: 'stack' });
  });

  it('exports any stack as a Compose file that docker-compose accepts, and ours as written', async () => {
    const created = await json('post', '/stacks', {
      definition: COMPOSE.replace('shop', 'export-me'),
      variables: { DB_PASSWORD: 'pw' },
    });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }).id;
    const exported = await t.http
      .get(`${O}/stacks/${id}/definition?format=compose`)
      .set('Authorization', auth);
    expect(exported.status).toBe(200);
    expect(exported.headers['content-type']).toMatch(/^application\/yaml/);
    const text = exported.text;
    const dir = mkdtempSync(join(tmpdir(), 'compose-export-'));
    try {
      writeFileSync(join(dir, 'compose.yaml'), text);
      const config = execFileSync('docker-compose', ['-f', join(dir, 'compose.yaml'), 'config'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(config).toContain('postgres:16-alpine');
      expect(config).toContain('pg_isready -U shop');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The export reads back as the same stack (its name is an x-stack-orchestrator key for docker-compose 1.29).
    const again = await json('post', '/unifier/validate?name=export-me', { definition: text });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ format: 'compose', services: ['db', 'web'] });

    const refused = await t.http.get(`${O}/stacks/${id}/definition?format=stack`).set('Authorization', auth);
    expect(refused.status).toBe(422);
    const asWritten = await t.http.get(`${O}/stacks/${id}/definition`).set('Authorization', auth);
    expect(asWritten.text).toContain('${DB_PASSWORD:?give DB_PASSWORD}');
  });

  it('takes Compose files and their variables over MCP as over HTTP', async () => {
    const valid = await mcp.ok('validate_stack_definition', {
      definition: COMPOSE,
      variables: { DB_PASSWORD: 'pw' },
      name: 'over-mcp',
    });
    expect(valid).toMatchObject({ valid: true, format: 'compose' });
    const invalid = (await mcp.refused('create_stack', {
      definition: COMPOSE.replace('image: busybox', 'image: busybox\n    privileged: true'),
      variables: { DB_PASSWORD: 'pw' },
      profiles: ['debug'],
    })) as {
      status: number;
      code: string;
      warnings?: unknown[];
    };
    expect(invalid).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(invalid.warnings?.length).toBeGreaterThan(0);
  });
});
