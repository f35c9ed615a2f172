import type { ServerResponse } from 'node:http';

/**
 * Headers on every response. The API serves JSON, YAML and text to programs, never a page: nothing
 * may be sniffed into HTML, framed, or loaded as a script or style; and nothing is cached unless a
 * route says otherwise (the key set does), because responses carry secrets (client secrets, join
 * tokens) and stack definitions, and an intermediary or a browser must keep none of them.
 * The console's static files replace the policy and the caching with their own (console-static.ts).
 */
export const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy':
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
} as const;

const ENTRIES = Object.entries(SECURITY_HEADERS);

export function setSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of ENTRIES) res.setHeader(name, value);
}
