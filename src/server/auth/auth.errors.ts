import { AppError } from '../common/app-error.js';

export const REALM = 'stack-orchestrator';

/** RFC 6749 section 5.2 errors of the token endpoint. */
export class OAuthError extends AppError {
  constructor(status: number, oauthError: string, description: string, headers?: Record<string, string>) {
    super(status, oauthError, oauthError, description, undefined, headers);
    this.oauthError = oauthError;
  }
}

export const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);
export const invalidClient = (scheme: 'Basic' | 'Bearer' = 'Basic') =>
  new OAuthError(401, 'invalid_client', 'Client authentication failed.', {
    'WWW-Authenticate': `${scheme} realm="${REALM}"`,
  });
export const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);
export const invalidScope = (description: string) => new OAuthError(400, 'invalid_scope', description);
export const unsupportedGrantType = (grant: string) =>
  new OAuthError(400, 'unsupported_grant_type', `Grant type ${JSON.stringify(grant)} is not supported.`);
export const unsupportedTokenType = () =>
  new OAuthError(400, 'unsupported_token_type', 'Only refresh tokens can be revoked; access tokens expire.');
export const tooManyAuthFailures = (retryAfterSeconds: number) =>
  new OAuthError(429, 'temporarily_unavailable', 'Too many failed authentication attempts; retry later.', {
    'Retry-After': String(retryAfterSeconds),
  });

/** RFC 6750 errors of protected resources, as problems. */
/** `resourceMetadata`: the RFC 9728 document's URL, which MCP clients follow to find the token endpoint. */
const bearer = (resourceMetadata: string | undefined, rest = '') =>
  `Bearer realm="${REALM}"${rest}${resourceMetadata ? `, resource_metadata="${resourceMetadata}"` : ''}`;
export const missingToken = (resourceMetadata?: string) =>
  new AppError(401, 'unauthorized', 'Unauthorized', 'A Bearer access token is required.', undefined, {
    'WWW-Authenticate': bearer(resourceMetadata),
  });
export const invalidToken = (reason: string, resourceMetadata?: string) =>
  new AppError(401, 'unauthorized', 'Unauthorized', `The access token is not valid: ${reason}.`, undefined, {
    'WWW-Authenticate': bearer(
      resourceMetadata,
      `, error="invalid_token", error_description="${reason.replace(/"/g, "'")}"`,
    ),
  });
export const insufficientScope = (scopes: string[]) =>
  new AppError(
    403,
    'forbidden',
    'Forbidden',
    `This operation needs the scope ${scopes.join(' ')}.`,
    undefined,
    {
      'WWW-Authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scopes.join(' ')}"`,
    },
  );
export const operatorOnly = (
  detail = 'This operation is reserved to administrators of the operator owner.',
) => new AppError(403, 'forbidden', 'Forbidden', detail);
export const undeclaredRoute = () =>
  new AppError(403, 'forbidden', 'Forbidden', 'This route declares no access rule and is closed.');
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError(
    429,
    'rate_limited',
    'Too Many Requests',
    'The request rate limit for this client is exceeded.',
    undefined,
    {
      'Retry-After': String(retryAfterSeconds),
    },
  );
