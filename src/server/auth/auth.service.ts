import { Leases } from '../common/leases.js';
import { splitBasic } from './basic-credentials.js';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { randomUUID } from 'node:crypto';
import { AuditService } from '../audit/audit.service.js';
import { RequestContext, type Caller } from '../common/request-context.js';
import { randomToken, tokenDigest } from '../common/secrets.js';
import { AppConfig } from '../config/config.js';
import type { TokenResponse, TokenValidation } from '../../contracts/api/oauth.js';
import {
  invalidClient,
  invalidGrant,
  invalidRequest,
  invalidScope,
  tooManyAuthFailures,
  unsupportedGrantType,
  unsupportedTokenType,
} from './auth.errors.js';
import { ClientsService } from './clients.service.js';
import type { ClientEntity } from './entities/client.entity.js';
import { RefreshTokenEntity } from './entities/refresh-token.entity.js';
import { RateLimitsService } from './rate-limits.service.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { hasScope, isScope, parseScopeParam } from './scopes.js';
import { SigningKeysService } from './signing-keys.service.js';
import { TokenCache } from './token-cache.js';

const CLEANUP_INTERVAL_MS = 3_600_000;

/** The fields of a token request, from a JSON or form body. */
export type TokenRequestBody = Record<string, unknown>;

/** RFC 6749 grants (client credentials, refresh token) issuing RFC 9068 access tokens. */
@Injectable()
export class AuthService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('auth');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly clients: ClientsService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly keys: SigningKeysService,
    private readonly limits: RateLimitsService,
    private readonly audit: AuditService,
    private readonly leases: Leases,
    private readonly config: AppConfig,
    private readonly tokens: TokenCache,
  ) {}

  onModuleInit(): void {
    this.timer = every(this.logger, 'refresh-token-cleanup', CLEANUP_INTERVAL_MS, async () => {
      // One replica at a time; the lease outlives an interval, so its holder keeps it.
      if (!(await this.leases.acquire('refresh-token-cleanup', CLEANUP_INTERVAL_MS + 10_000))) return;
      const n = await this.refreshTokens.deleteExpired();
      if (n > 0) this.logger.log({ deleted: n }, 'expired refresh tokens deleted');
    });
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // Given up at once: another replica need not wait out the TTL.
    await this.leases.release('refresh-token-cleanup').catch(() => undefined);
  }

  /** `POST /oauth/token`. `authorization` is the request's Authorization header, if any. */
  async token(body: TokenRequestBody, authorization: string | undefined): Promise<TokenResponse> {
    const grantType = field(body, 'grant_type');
    if (grantType === undefined) throw invalidRequest('grant_type is required.');
    switch (grantType) {
      case 'client_credentials':
        return this.clientCredentials(body, authorization);
      case 'refresh_token':
        return this.refresh(body, authorization);
      default:
        throw unsupportedGrantType(grantType);
    }
  }

  /**
   * `POST /oauth/revoke` (RFC 7009): a live refresh token and every token of its family, that is the
   * one sign-in it descends from, stop working; the client's other sign-ins are untouched. The token
   * is its own proof (256 random bits), as at the refresh grant. An unknown, used, revoked or
   * expired token answers the same (RFC 7009 2.2), so the route tells nothing about tokens.
   */
  async revoke(body: TokenRequestBody): Promise<void> {
    const token = field(body, 'token');
    if (!token) throw invalidRequest('token is required.');
    const hint = field(body, 'token_type_hint');
    // Access tokens are not tracked (they expire within ACCESS_TOKEN_TTL): nothing to revoke.
    if (hint === 'access_token' || !token.startsWith('rt_')) throw unsupportedTokenType();
    const stored = await this.refreshTokens.findByHash(tokenDigest(token));
    const live =
      stored &&
      stored.usedAt === null &&
      stored.revokedAt === null &&
      stored.expiresAt.getTime() > Date.now();
    if (!live) return;
    const revoked = await this.refreshTokens.revokeFamily(stored.familyId);
    await this.audit.record({
      action: 'refresh.revoked',
      owner: stored.owner,
      actor: stored.clientId,
      target: stored.familyId,
      details: { revoked },
    });
  }

  /** `GET .../auth/validate`: the verified token's claims. */
  validate(caller: Caller): TokenValidation {
    const c = caller.claims;
    return {
      active: true,
      client_id: caller.clientId,
      sub: c.sub as string,
      owner: caller.owner,
      scope: caller.scopes.join(' '),
      iss: c.iss as string,
      aud: c.aud as string | string[],
      exp: c.exp as number,
      iat: c.iat as number,
      jti: c.jti as string,
    };
  }

  private async clientCredentials(
    body: TokenRequestBody,
    authorization: string | undefined,
  ): Promise<TokenResponse> {
    const credentials = clientCredentialsOf(body, authorization);
    if (!credentials) throw invalidClient();
    const client = await this.clients.authenticate(
      credentials.clientId,
      credentials.secret,
      credentials.scheme,
    );
    const scopes = narrow(client.scopes, field(body, 'scope'));
    const issued = await this.issue(client, scopes, randomUUID());
    await this.refreshTokens.insert(issued.successor);
    return this.issued(client, issued, 'client_credentials');
  }

  private async refresh(body: TokenRequestBody, authorization: string | undefined): Promise<TokenResponse> {
    const token = field(body, 'refresh_token');
    if (!token) throw invalidRequest('refresh_token is required.');
    const ip = RequestContext.ip();
    const wait = this.limits.authBlockedFor(undefined, ip);
    if (wait > 0) throw tooManyAuthFailures(wait);
    // Client authentication is optional here (the document's refresh body has no client fields);
    // when given, it must be valid and be the token's client.
    const credentials = clientCredentialsOf(body, authorization);
    const authenticated = credentials
      ? await this.clients.authenticate(credentials.clientId, credentials.secret, credentials.scheme)
      : undefined;

    const stored = await this.refreshTokens.findByHash(tokenDigest(token));
    if (stored && stored.usedAt !== null && stored.revokedAt === null) return this.reused(stored);
    if (!stored || stored.revokedAt !== null || stored.expiresAt.getTime() <= Date.now()) {
      this.limits.recordAuthFailure(undefined, ip);
      throw invalidGrant('The refresh token is invalid, expired or revoked.');
    }
    if (authenticated && authenticated.clientId !== stored.clientId) {
      throw invalidGrant('The refresh token was issued to another client.');
    }
    const client = authenticated ?? (await this.clients.findActive(stored.clientId));
    if (!client) throw invalidGrant('The client of this refresh token no longer exists or is disabled.');
    // A refresh never widens: the original grant, and what the client holds today. Every refusal
    // happens before the token is redeemed, so a refused request leaves it usable.
    const original = parseScopeParam(stored.scope).filter((s) => isScope(s) && hasScope(client.scopes, s));
    const scopes = narrow(original, field(body, 'scope'));
    const issued = await this.issue(client, scopes, stored.familyId);
    // Lost the race to a concurrent refresh with the same token: that is a reuse too.
    if (!(await this.refreshTokens.rotate(stored.tokenHash, issued.successor))) return this.reused(stored);
    return this.issued(client, issued, 'refresh_token');
  }

  /** A used refresh token presented again: its whole family is revoked. */
  private async reused(token: RefreshTokenEntity): Promise<never> {
    const revoked = await this.refreshTokens.revokeFamily(token.familyId);
    await this.tokens.revokeFamily(token.familyId);
    await this.audit.record({
      action: 'refresh.reuse_detected',
      outcome: 'failure',
      owner: token.owner,
      actor: token.clientId,
      target: token.familyId,
      details: { revoked },
    });
    throw invalidGrant('The refresh token was already used; every token of its family is revoked.');
  }

  /** A signed access token and a new refresh token, not yet stored. */
  private async issue(client: ClientEntity, scopes: string[], familyId: string): Promise<Issued> {
    const jti = randomUUID();
    const ttlSeconds = Math.floor(this.config.accessTokenTtlMs / 1000);
    const scope = scopes.join(' ');
    const accessToken = await this.keys.sign(
      {
        iss: this.config.publicUrl,
        sub: client.clientId,
        aud: this.config.tokenAudience,
        jti,
        client_id: client.clientId,
        // The refresh family: its revocation refuses this token too (docs/security.md).
        sid: familyId,
        scope,
        owner: client.owner,
      },
      ttlSeconds,
    );
    const refreshToken = randomToken('rt_', 32);
    return {
      jti,
      response: {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: ttlSeconds,
        refresh_token: refreshToken,
        scope,
      },
      successor: Object.assign(new RefreshTokenEntity(), {
        id: randomUUID(),
        tokenHash: tokenDigest(refreshToken),
        familyId,
        clientId: client.clientId,
        owner: client.owner,
        scope,
        createdAt: new Date(),
        expiresAt: new Date(Date.now() + this.config.refreshTokenTtlMs),
        usedAt: null,
        revokedAt: null,
      }),
    };
  }

  /** Audits a stored issue and answers it. */
  private async issued(client: ClientEntity, issued: Issued, grant: string): Promise<TokenResponse> {
    await this.audit.record({
      action: 'token.issued',
      owner: client.owner,
      actor: client.clientId,
      target: issued.jti,
      details: { grant, scope: issued.response.scope },
    });
    return issued.response;
  }
}

interface Issued {
  jti: string;
  response: TokenResponse;
  /** The new refresh token's row. */
  successor: RefreshTokenEntity;
}

/** A string field of the body; anything else given is a malformed request. */
function field(body: TokenRequestBody, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`${name} must be a string.`);
  if (value.length > 4096) throw invalidRequest(`${name} is too long.`);
  return value;
}

interface Credentials {
  clientId: string;
  secret: string;
  scheme: 'Basic' | 'Bearer';
}

/** Client credentials from HTTP Basic (RFC 6749 2.3.1) or the body; using both is refused. */
function clientCredentialsOf(
  body: TokenRequestBody,
  authorization: string | undefined,
): Credentials | undefined {
  const bodyId = field(body, 'client_id');
  const bodySecret = field(body, 'client_secret');
  if (authorization && /^Basic\b/i.test(authorization)) {
    if (bodySecret !== undefined) throw invalidRequest('Use one client authentication method, not two.');
    const basic = splitBasic(authorization);
    try {
      // RFC 6749 2.3.1: the token endpoint's Basic credentials are form-encoded first.
      const clientId = decodeURIComponent((basic?.id ?? '').replace(/\+/g, ' '));
      const secret = decodeURIComponent((basic?.secret ?? '').replace(/\+/g, ' '));
      if (bodyId !== undefined && bodyId !== clientId)
        throw invalidRequest('client_id does not match the Basic credentials.');
      return { clientId, secret, scheme: 'Basic' };
    } catch (err) {
      if (err instanceof URIError) throw invalidClient('Basic');
      throw err;
    }
  }
  if (bodyId === undefined && bodySecret === undefined) return undefined;
  if (bodyId === undefined || bodySecret === undefined) throw invalidClient('Bearer');
  return { clientId: bodyId, secret: bodySecret, scheme: 'Bearer' };
}

/** The requested subset of `granted`, or all of it when nothing is requested. */
function narrow(granted: string[], requested: string | undefined): string[] {
  if (requested === undefined) return granted;
  const wanted = parseScopeParam(requested);
  const refused = wanted.filter((s) => !isScope(s) || !hasScope(granted, s));
  if (wanted.length === 0 || refused.length > 0) {
    throw invalidScope(`The client may not request ${refused.join(' ') || 'an empty scope'}.`);
  }
  return wanted;
}
