import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, defaultConsoleDir } from '../../src/server/console/console-static.js';
import { startTestApp, type TestApp } from '../support/app.js';

/** The built console (npm run build) served at /console: no token, its own CSP, cacheable assets. */
describe('console static files', () => {
  let t: TestApp;
  const dir = defaultConsoleDir();
  beforeAll(async () => {
    if (!existsSync(join(dir, 'index.html'))) throw new Error(`${dir} is missing: run npm run build first`);
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  const assets = () => readdirSync(join(dir, 'assets'));

  it('serves the page without a token, with a CSP that allows only its own scripts and styles', async () => {
    const res = await t.http.get('/console/').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    // No inline script: every script is a file of ours.
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.text).toMatch(/<script type="module" crossorigin src="\/console\/assets\/index-[\w-]+\.js">/);
    await t.http.get('/console').expect(301).expect('Location', '/console/');
  });

  it('answers every page of the app with index.html, so reloads and links work', async () => {
    for (const path of ['/console/workers', '/console/stacks/abc', '/console/jobs/x?status=failed']) {
      const res = await t.http.get(path).expect(200);
      expect(res.text).toContain('<div id="app"></div>');
      expect(res.headers['cache-control']).toBe('no-cache');
    }
  });

  it('lets browsers keep hashed assets for a year, and answers a missing asset with a 404 problem', async () => {
    const js = assets().find((f) => f.endsWith('.js'));
    const css = assets().find((f) => f.endsWith('.css'));
    for (const file of [js, css]) {
      const res = await t.http.get(`/console/assets/${file}`).expect(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers.etag).toBeDefined();
    }
    const missing = await t.http.get('/console/assets/nope-123.js').expect(404);
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(missing.headers['cache-control']).toBe('no-store');
    await t.http.get('/console/favicon.svg').expect(200).expect('Cache-Control', 'no-cache');
    await t.http.get('/console/../package.json').expect((r) => expect(r.status).not.toBe(200));
    await t.http.get('/console/%2e%2e/package.json').expect(404);
  });

  it('changes nothing for the API: its responses keep the locked-down policy and need a token', async () => {
    const res = await t.http.get('/api/v1/orchestrator/info').expect(401);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).not.toContain('script-src');
    await t.http.post('/console/').expect(404);
  });
});
