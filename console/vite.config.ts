import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is served by the service at /console (src/server/console): asset URLs carry that base.
// JSX goes through Vite's own transform with Preact's automatic runtime; no framework plugin.
const target = process.env.CONSOLE_API ?? 'http://127.0.0.1:5260';
const proxied = [
  '/api',
  '/v1',
  '/oauth',
  '/prometheus',
  '/health',
  '/.well-known',
  '/install.sh',
  '/install.ps1',
];

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // No inline script or style may end up in index.html: the service's CSP forbids both.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    host: '127.0.0.1',
    port: 5173,
    strictPort: true,
    proxy: Object.fromEntries(proxied.map((path) => [path, { target, changeOrigin: false }])),
  },
});
