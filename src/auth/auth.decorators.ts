import { SetMetadata, applyDecorators } from '@nestjs/common';
import type { Scope } from './scopes.js';

export const PUBLIC_ROUTE = 'auth:public';
export const REQUIRED_SCOPES = 'auth:scopes';

/** No token needed: probes, /metrics, orchestrator health, the token endpoint, the key set. */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/**
 * A valid access token holding every listed scope is needed (`admin` satisfies any). With no
 * scopes, any valid token will do. A route with neither this nor @Public() is refused to everyone.
 */
export const RequireScopes = (...scopes: Scope[]) => applyDecorators(SetMetadata(REQUIRED_SCOPES, scopes));
