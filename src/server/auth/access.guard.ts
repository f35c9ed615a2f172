import { ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PinoLogger } from 'nestjs-pino';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppError } from '../common/app-error.js';
import { checkMediaType, consumedTypes } from '../common/media-type.js';
import { isDatabaseUnavailable } from '../database/database-errors.js';
import { RequestContext, type Caller } from '../common/request-context.js';
import { ACCEPTS_BASIC, PUBLIC_ROUTE, REQUIRED_SCOPES } from './auth.decorators.js';
import { BasicCredentials } from './basic-credentials.js';
import {
  REALM,
  insufficientScope,
  invalidToken,
  missingToken,
  rateLimited,
  undeclaredRoute,
} from './auth.errors.js';
import { TokenRejected } from './jwt.strategy.js';
import { EXPIRED, TokenCache } from './token-cache.js';
import { RateLimitsService } from './rate-limits.service.js';
import { hasScope, type Scope } from './scopes.js';
import { AppConfig } from '../config/config.js';
import { RESOURCE_METADATA_PATH } from './oauth-metadata.js';

/** `Bearer` and one b64token (RFC 6750 section 2.1), nothing after it. */
const BEARER = /^Bearer [A-Za-z0-9\-._~+/]+=*$/;

/** What a handler's decorators say about access, read once per handler. */
interface RoutePolicy {
  public: boolean;
  /** undefined: the route declares neither @Public nor @RequireScopes. */
  scopes: Scope[] | undefined;
  acceptsBasic: boolean;
  consumes: string[];
}

/**
 * The global guard: every route is closed unless it is @Public() or declares its scopes with
 * @RequireScopes(). It verifies the Bearer token (passport-jwt), or on routes marked
 * @AcceptsBasicAuth() a client id and secret, puts the caller in the request context, applies the
 * per-client rate limit and checks the scopes.
 */
@Injectable()
export class AccessGuard extends AuthGuard('jwt') {
  private readonly logger = new Logger('auth');
  private readonly resourceMetadata: string;
  /** Decorator metadata never changes once the application runs: read per handler, not per request. */
  private readonly policies = new WeakMap<object, WeakMap<object, RoutePolicy>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly limits: RateLimitsService,
    private readonly basic: BasicCredentials,
    private readonly tokens: TokenCache,
    config: AppConfig,
  ) {
    super();
    this.resourceMetadata = `${config.publicUrl}${RESOURCE_METADATA_PATH}`;
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const policy = this.policyOf(context);
    const req = context.switchToHttp().getRequest<Request>();
    await this.decide(context, req, policy);
    checkMediaType(req, policy.consumes);
    return true;
  }

  private policyOf(context: ExecutionContext): RoutePolicy {
    const handler = context.getHandler();
    const controller = context.getClass();
    let ofClass = this.policies.get(controller);
    if (!ofClass) this.policies.set(controller, (ofClass = new WeakMap()));
    let policy = ofClass.get(handler);
    if (!policy) {
      const targets = [handler, controller];
      policy = {
        public: this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, targets) === true,
        scopes: this.reflector.getAllAndOverride<Scope[] | undefined>(REQUIRED_SCOPES, targets),
        acceptsBasic: this.reflector.getAllAndOverride<boolean | undefined>(ACCEPTS_BASIC, targets) === true,
        consumes: consumedTypes(this.reflector, context),
      };
      ofClass.set(handler, policy);
    }
    return policy;
  }

  /** Whether the caller may call the route: throws the 401, 403 or 429 otherwise. */
  private async decide(context: ExecutionContext, req: Request, policy: RoutePolicy): Promise<void> {
    // Decisions are recorded at debug only; at info this costs one level check per request.
    const debug = PinoLogger.root.isLevelEnabled('debug');
    const route = debug
      ? `${req.method} ${(req.route as { path?: string } | undefined)?.path ?? req.path}`
      : '';
    if (policy.public) {
      if (debug) this.logger.debug({ route, decision: 'public' }, 'access decision');
      return;
    }
    const scopes = policy.scopes;
    if (scopes === undefined) {
      this.logger.error(
        { method: req.method, path: req.path },
        'route declares neither @Public nor @RequireScopes',
      );
      throw undeclaredRoute();
    }
    const acceptsBasic = policy.acceptsBasic;
    const basic = acceptsBasic && /^Basic\b/i.test(req.headers.authorization ?? '');
    try {
      if (basic)
        (req as Request & { user: Caller }).user = await this.basic.caller(req.headers.authorization ?? '');
      else await this.bearer(req, context);
    } catch (err) {
      if (debug)
        this.logger.debug({ route, required_scopes: scopes, decision: 'unauthenticated' }, 'access decision');
      throw acceptsBasic && !basic ? offerBasic(err) : err;
    }
    const caller = (req as Request & { user: Caller }).user;
    RequestContext.setCaller(caller);
    const decided = (decision: string) =>
      debug &&
      this.logger.debug(
        {
          route,
          client_id: caller.clientId,
          owner: caller.owner,
          required_scopes: scopes,
          granted_scopes: caller.scopes,
          decision,
        },
        'access decision',
      );
    const wait = this.limits.takeRequest(caller.clientId);
    if (wait > 0) {
      decided('rate_limited');
      throw rateLimited(wait);
    }
    if (!scopes.every((scope) => hasScope(caller.scopes, scope))) {
      decided('forbidden');
      throw insufficientScope(scopes);
    }
    decided('allowed');
  }

  /** A token verified before (and still valid, not revoked) is taken from the cache; else passport. */
  private async bearer(req: Request, context: ExecutionContext): Promise<void> {
    const authorization = req.headers.authorization;
    if (authorization === undefined) return void (await super.canActivate(context));
    // RFC 6750: `Bearer` and one b64token. passport-jwt's extractor takes the second word of
    // anything, so `Bearer <token> junk` would pass; it is refused here, before the cache.
    if (/^Bearer\s/i.test(authorization) && !BEARER.test(authorization))
      throw invalidToken('the Authorization header is not "Bearer" and one token', this.resourceMetadata);
    const cached = this.tokens.lookup(authorization);
    if (cached === EXPIRED) throw invalidToken('the token has expired', this.resourceMetadata);
    if (cached) {
      (req as Request & { user: Caller }).user = cached;
      return;
    }
    const generation = this.tokens.generation;
    await super.canActivate(context);
    this.tokens.store(authorization, (req as Request & { user: Caller }).user, generation);
  }

  /** passport's verdict: the caller, or our 401 with the reason. */
  override handleRequest<TUser = Caller>(err: unknown, user: TUser | false, info: unknown): TUser {
    if (err instanceof AppError) throw err;
    if (user) return user;
    const reason = err ?? info;
    // The database being down is an outage (503), not a bad token.
    if (isDatabaseUnavailable(reason)) throw reason;
    if (reason === undefined || (reason instanceof Error && reason.message === 'No auth token'))
      throw missingToken(this.resourceMetadata);
    if (reason instanceof TokenRejected) throw invalidToken(reason.message, this.resourceMetadata);
    if (reason instanceof Error) {
      switch (reason.name) {
        case 'TokenExpiredError':
          throw invalidToken('the token has expired', this.resourceMetadata);
        case 'NotBeforeError':
          throw invalidToken('the token is not valid yet', this.resourceMetadata);
        case 'JsonWebTokenError':
          throw invalidToken(jwtReason(reason.message), this.resourceMetadata);
      }
    }
    // Whatever a client sends as a token is its problem, not ours: a 401 and a debug record, so a
    // flood of bad tokens cannot fill the error log (and the record carries no stack).
    this.logger.debug(
      { reason: reason instanceof Error ? `${reason.name}: ${reason.message}` : typeof reason },
      'token refused',
    );
    throw invalidToken('verification failed', this.resourceMetadata);
  }
}

/** A Bearer 401 on a route that also takes Basic: both challenges, so a browser or Grafana may ask. */
function offerBasic(err: unknown): unknown {
  if (!(err instanceof AppError) || err.status !== 401) return err;
  const bearer = err.headers?.['WWW-Authenticate'];
  return new AppError(
    401,
    err.code,
    err.title,
    `${err.message} HTTP Basic with a client id and secret is accepted too.`,
    err.errors,
    { ...err.headers, 'WWW-Authenticate': `${bearer ? `${bearer}, ` : ''}Basic realm="${REALM}"` },
  );
}

/** jsonwebtoken's messages, reduced to what a client may learn. */
function jwtReason(message: string): string {
  if (message.startsWith('jwt audience invalid')) return 'wrong audience';
  if (message.startsWith('jwt issuer invalid')) return 'wrong issuer';
  if (message === 'invalid signature') return 'invalid signature';
  if (message === 'invalid algorithm') return 'algorithm not accepted';
  return 'malformed token';
}
