// The documents under /.well-known that OAuth clients read (RFC 7517, RFC 8414, RFC 9728).
import type { Scope } from './clients.js';

/** A public signing key (ES256, P-256). */
export interface PublicJsonWebKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

/** `GET /.well-known/jwks.json`: the keys that verify access tokens. */
export interface JsonWebKeySet {
  keys: PublicJsonWebKey[];
}

/** `GET /.well-known/oauth-authorization-server` (RFC 8414). */
export interface AuthorizationServerMetadata {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  /** RFC 7009: `POST /oauth/revoke`; the refresh token itself is the credential. */
  revocation_endpoint: string;
  revocation_endpoint_auth_methods_supported: 'none'[];
  grant_types_supported: ('client_credentials' | 'refresh_token')[];
  token_endpoint_auth_methods_supported: ('client_secret_basic' | 'client_secret_post')[];
  /** Empty: no authorization endpoint, so no response types. */
  response_types_supported: string[];
  scopes_supported: Scope[];
}

/** `GET /.well-known/oauth-protected-resource` (RFC 9728), named by every 401. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: 'header'[];
  scopes_supported: Scope[];
  resource_name: string;
}
