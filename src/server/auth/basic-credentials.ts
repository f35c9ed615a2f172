import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Caller } from '../common/request-context.js';
import { invalidClient } from './auth.errors.js';
import { ClientsService } from './clients.service.js';

/** How long verified Basic credentials are trusted without hashing the secret again. */
export const BASIC_CACHE_MS = 30_000;
const MAX_CACHED = 1000;

/**
 * `Basic <base64(id:secret)>` split at the first colon, undecoded (RFC 7617); undefined when the
 * header is not Basic, a 401 when it is Basic but malformed.
 */
export function splitBasic(authorization: string | undefined): { id: string; secret: string } | undefined {
  if (authorization === undefined || !/^Basic\b/i.test(authorization)) return undefined;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  const decoded = basic ? Buffer.from(basic[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 1) throw invalidClient('Basic');
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/**
 * HTTP Basic with a client id and secret, for the routes that take it (the metric store's, which
 * Grafana and Prometheus call with basic_auth). Verified credentials are kept for BASIC_CACHE_MS
 * under a hash of both, so a dashboard does not pay a slow secret hash per panel; a disabled or
 * deleted client is refused again once its entry runs out.
 */
@Injectable()
export class BasicCredentials {
  private readonly verified = new Map<string, { caller: Caller; until: number }>();

  constructor(private readonly clients: ClientsService) {}

  async caller(authorization: string): Promise<Caller> {
    const credentials = splitBasic(authorization);
    if (credentials === undefined) throw invalidClient('Basic');
    const key = createHash('sha256')
      .update(credentials.id)
      .update('\u0000')
      .update(credentials.secret)
      .digest('hex');
    const now = Date.now();
    const hit = this.verified.get(key);
    if (hit !== undefined && hit.until > now) return hit.caller;
    const client = await this.clients.authenticate(credentials.id, credentials.secret, 'Basic');
    const caller: Caller = {
      clientId: client.clientId,
      owner: client.owner,
      scopes: client.scopes,
      claims: {},
    };
    if (this.verified.size >= MAX_CACHED) this.verified.clear();
    this.verified.set(key, { caller, until: now + BASIC_CACHE_MS });
    return caller;
  }
}
