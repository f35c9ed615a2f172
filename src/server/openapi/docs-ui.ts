import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The reference UI at /docs: Swagger UI from the swagger-ui-dist package (@nestjs/swagger's own
 * dependency), so it works offline; no CDN, no inline script.
 */
const require = createRequire(import.meta.url);
const swaggerRequire = createRequire(require.resolve('@nestjs/swagger'));
const DIST = dirname(swaggerRequire.resolve('swagger-ui-dist/package.json'));

/** The files /docs/:file serves, with their types. */
export const DOCS_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/**
 * The UI's policy: its own scripts and styles (Swagger UI sets style attributes, hence
 * 'unsafe-inline' for styles only), images from itself and data: URLs (its icons), requests to this
 * service only. Framing, base URIs and form posts stay refused as on every other route.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const cache = new Map<string, Buffer>();

export function docsAsset(name: string): { body: Buffer; type: string } | undefined {
  const type = Object.hasOwn(DOCS_ASSETS, name) ? DOCS_ASSETS[name] : undefined;
  if (!type) return undefined;
  let body = cache.get(name);
  if (!body) {
    body = readFileSync(join(DIST, name));
    cache.set(name, body);
  }
  return { body, type };
}

export const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>stack-orchestrator API</title>
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="stylesheet" href="/docs/swagger-ui.css">
    <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/swagger-ui-bundle.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

/** Starts the UI on this service's document; no validator (it would call validator.swagger.io). */
export const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  persistAuthorization: false,
});
`;
