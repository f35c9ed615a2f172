import { SetMetadata, applyDecorators, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Caller as AuthenticatedCaller } from '../common/request-context.js';
import type { Scope } from './scopes.js';

export const PUBLIC_ROUTE = 'auth:public';
export const REQUIRED_SCOPES = 'auth:scopes';
export const ACCEPTS_BASIC = 'auth:basic';

/** No token needed: probes, /metrics, orchestrator health, the token endpoint, the key set. */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/**
 * A valid access token holding every listed scope is needed (`admin` satisfies any). With no
 * scopes, any valid token will do. A route with neither this nor @Public() is refused to everyone.
 */
export const RequireScopes = (...scopes: Scope[]) => applyDecorators(SetMetadata(REQUIRED_SCOPES, scopes));

/**
 * The route also takes HTTP Basic with a client id and secret instead of a Bearer token (the
 * metric store's routes, for Grafana and Prometheus); scopes are then the client's own.
 */
export const AcceptsBasicAuth = () => SetMetadata(ACCEPTS_BASIC, true);

/** The client a request acts for, as its verified access token says. */
export type Caller = AuthenticatedCaller;

/**
 * `@Caller()`: the verified caller of a route that declares its scopes, handed to the service as an
 * argument, so every service method says in its signature whom it acts for.
 */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = context.switchToHttp().getRequest<{ user?: Caller }>().user;
  // Only a route with @RequireScopes has a caller; on a @Public route this is a programming error.
  if (!caller) throw new Error('@Caller() on a route without an authenticated caller');
  return caller;
});
