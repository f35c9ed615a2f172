import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { violations } from '../support/openapi-check.js';

const committed = load(readFileSync(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string }>>;
};

/** Where the Debian package puts Chromium (.ci/run installs it); Playwright downloads nothing. */
const CHROMIUM = '/usr/bin/chromium';

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
}

/** `METHOD /path/{param}` for every route Nest registered on Express. */
function registeredRoutes(t: TestApp): string[] {
  const express = t.app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  const routes: string[] = [];
  for (const layer of express.router.stack) {
    if (!layer.route) continue;
    const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
    for (const path of paths)
      for (const [method, on] of Object.entries(layer.route.methods))
        if (on && method !== '_all')
          routes.push(`${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  }
  return routes;
}

const documented = (paths: Record<string, Record<string, unknown>>): Set<string> =>
  new Set(
    Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );

describe('the OpenAPI document', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('lists every route Nest registered (the console is static files, not API routes)', () => {
    // Nest mounts middleware (`forRoutes('*path')`: pino-http, the body parsers) as catch-all
    // routes for every method; no controller route has a wildcard.
    const routes = registeredRoutes(t).filter(
      (route) => !/^\w+ \/console(\/|$)/.test(route) && !route.includes('*'),
    );
    expect(routes.length).toBeGreaterThan(100);
    const listed = documented(committed.paths);
    expect(routes.filter((route) => !listed.has(route))).toEqual([]);
    // And nothing that is not served, besides liveness (answered ahead of Express).
    const served = new Set([...routes, 'GET /health/live', 'HEAD /health/live']);
    expect([...listed].filter((route) => !served.has(route))).toEqual([]);
  });

  it('is served as JSON and YAML without a token, equal to docs/openapi.yaml', async () => {
    const json = await t.http.get('/api/v1/openapi.json').expect(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect(json.body).toEqual(committed);
    const yaml = await t.http.get('/api/v1/openapi.yaml').expect(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    expect(load(yaml.text)).toEqual(committed);
  });

  it('holds every answer of the test apps to itself', async () => {
    const before = t.openapi.checked;
    await t.http.get('/health/ready').expect(200);
    await t.http.get('/api/v1/orchestrator/jobs').expect(401);
    expect(t.openapi.checked).toBe(before + 2);
    const json = 'application/json';
    const body = (value: unknown) => Buffer.from(JSON.stringify(value));
    // An undocumented status, a body off its schema, an undocumented media type, an unknown route.
    expect(t.openapi.check('get', '/api/v1/orchestrator/jobs', 418, json, body({}))).toMatch(
      /status 418 is not documented/,
    );
    expect(t.openapi.check('get', '/api/v1/orchestrator/jobs', 200, json, body({ jobs: [] }))).toMatch(
      /next_cursor/,
    );
    expect(t.openapi.check('get', '/api/v1/orchestrator/jobs', 200, 'text/html', body({}))).toMatch(
      /media type text\/html/,
    );
    expect(t.openapi.check('get', '/api/v1/orchestrator/nothing', 200, json, body({}))).toMatch(
      /no operation/,
    );
    // The literal route wins over the parameter: connectivity is not a worker id.
    expect(
      t.openapi.check(
        'get',
        '/v1/orchestrator/workers/connectivity',
        200,
        json,
        body({ workers: [], links: [] }),
      ),
    ).toBeUndefined();
    expect(violations).toEqual([]);
  });

  it('names the scopes the guard requires, and no security on public routes', () => {
    const ops = committed.paths as unknown as Record<
      string,
      Record<string, { security?: Record<string, string[]>[] }>
    >;
    expect(ops['/api/v1/orchestrator/stacks'].post.security).toEqual([
      { oauth2: ['orchestrator:write'] },
      { bearer: ['orchestrator:write'] },
    ]);
    expect(ops['/prometheus/api/v1/query'].get.security).toEqual([
      { oauth2: ['metrics:read'] },
      { bearer: ['metrics:read'] },
      { basic: ['metrics:read'] },
    ]);
    expect(ops['/metrics'].get.security).toEqual([]);
    expect(ops['/api/v1/auth/validate'].get.security).toEqual([{ oauth2: [] }, { bearer: [] }]);
  });

  it('serves the reference UI at /docs from the package, without a token', async () => {
    const page = await t.http.get('/docs').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/https?:\/\//);
    await t.http
      .get('/docs/swagger-ui-bundle.js')
      .expect(200)
      .expect('content-type', /javascript/);
    await t.http
      .get('/docs/swagger-ui.css')
      .expect(200)
      .expect('content-type', /text\/css/);
    await t.http.get('/docs/init.js').expect(200);
    await t.http.get('/docs/package.json').expect(404);
    await t.http.get('/docs/..%2Fpackage.json').expect(404);
    // Every other route keeps the strict policy.
    const other = await t.http.get('/health/ready');
    expect(other.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('renders the reference UI in a browser under its policy, offline', async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const refused: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') refused.push(message.text());
      });
      const offsite: string[] = [];
      await page.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(t.url) || url.startsWith('data:')) return route.continue();
        offsite.push(url);
        return route.abort();
      });
      await page.goto(`${t.url}/docs`);
      await page.locator('.opblock').first().waitFor();
      // The UI draws only the tags near the viewport, so count what it read from the document, and
      // the errors it found in it.
      const ui = () =>
        page.evaluate(() => {
          const { specSelectors, errSelectors } = (
            globalThis as unknown as {
              ui: {
                specSelectors: { operations(): { size: number } };
                errSelectors: { allErrors(): { size: number } };
              };
            }
          ).ui;
          return { operations: specSelectors.operations().size, errors: errSelectors.allErrors().size };
        });
      await expect.poll(async () => (await ui()).operations, { timeout: 20_000 }).toBeGreaterThan(100);
      expect((await ui()).errors).toBe(0);
      await expect(page.locator('.information-container .title').innerText()).resolves.toContain(
        'stack-orchestrator',
      );
      expect(refused).toEqual([]);
      expect(offsite).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
