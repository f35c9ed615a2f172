import type {
  AuthorizationServerMetadata,
  ProtectedResourceMetadata,
} from '../../contracts/api/well-known.js';
import { SCOPES } from './scopes.js';

/** Where the protected-resource metadata (RFC 9728) is served; 401 answers point at it. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** RFC 8414: this service is its own authorization server (client credentials and refresh tokens). */
export function authorizationServerMetadata(publicUrl: string): AuthorizationServerMetadata {
  return {
    issuer: publicUrl,
    token_endpoint: `${publicUrl}/oauth/token`,
    jwks_uri: `${publicUrl}/.well-known/jwks.json`,
    revocation_endpoint: `${publicUrl}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: ['none'],
    grant_types_supported: ['client_credentials', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: [],
    scopes_supported: [...SCOPES],
  };
}

/** RFC 9728: what protects the API and the MCP endpoint, and who issues its tokens. */
export function protectedResourceMetadata(publicUrl: string): ProtectedResourceMetadata {
  return {
    resource: publicUrl,
    authorization_servers: [publicUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: [...SCOPES],
    resource_name: 'stack-orchestrator',
  };
}
