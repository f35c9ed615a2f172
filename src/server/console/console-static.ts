import type { NextFunction, Request, Response } from 'express';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../tunnel/install/package-root.js';

/** Where `npm run build` writes the console (console/vite.config.ts). */
export const defaultConsoleDir = (): string => join(packageRoot(import.meta.url), 'dist/console');

export const CONSOLE_PATH = '/console';

/**
 * The console's own policy, replacing the API's `default-src 'none'` on its files only: scripts,
 * styles, images and API calls from this origin, nothing inline, nothing from elsewhere, never framed.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Vite names every built asset after its content: such a file never changes under its name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The page and the unhashed files are checked on every load, so a new build shows at once. */
const REVALIDATE = 'no-cache';

/**
 * Serves the built console under /console: files as they are, any other path under it (a page of
 * the single-page app) as index.html. Static and stateless, so every replica serves it alike; the
 * files need no token, and every API call they make does. A missing asset falls through to the
 * API's 404 problem.
 */
export function consoleMiddleware(dir: string) {
  const index = join(dir, 'index.html');
  return (req: Request, res: Response, next: NextFunction): void => {
    // Every API request passes here: a prefix test before Express parses the URL (`req.path`).
    if (!req.url.startsWith(CONSOLE_PATH)) return next();
    const path = req.path;
    if (path !== CONSOLE_PATH && !path.startsWith(`${CONSOLE_PATH}/`)) return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (!existsSync(index)) return next();
    if (path === CONSOLE_PATH) {
      res.redirect(301, `${CONSOLE_PATH}/`);
      return;
    }
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    const relative = path.slice(CONSOLE_PATH.length + 1);
    const asset = relative.startsWith('assets/');
    const sendIndex = () => {
      res.setHeader('Cache-Control', REVALIDATE);
      res.sendFile('index.html', { root: dir, cacheControl: false }, (err) => err && next(err));
    };
    if (relative === '' || relative === 'index.html') return sendIndex();
    res.setHeader('Cache-Control', asset ? IMMUTABLE : REVALIDATE);
    res.sendFile(
      relative,
      { root: dir, dotfiles: 'deny', cacheControl: false },
      (err?: Error & { status?: number }) => {
        if (!err) return;
        if (res.headersSent) return next(err);
        res.removeHeader('Cache-Control');
        res.setHeader('Cache-Control', 'no-store');
        // A page path of the app (no file by that name) gets the app; a missing file is a 404.
        if (err.status === 404 && !asset && !/\.[a-z0-9]+$/i.test(relative)) return sendIndex();
        if (err.status === 404 || err.status === 403) return next();
        next(err);
      },
    );
  };
}
