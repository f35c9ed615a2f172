// The token endpoint (`POST /oauth/token`) and `GET .../auth/validate`.

/** The fields of a token request, as JSON or as a form; the client may authenticate with Basic instead. */
export interface TokenRequest {
  grant_type: 'client_credentials' | 'refresh_token';
  client_id?: string;
  client_secret?: string;
  refresh_token?: string;
  /** Space-separated scopes, a subset of the client's. */
  scope?: string;
}

/** `POST /oauth/revoke` (RFC 7009), as JSON or as a form: revokes the refresh token's whole family. */
export interface RevokeRequest {
  token: string;
  token_type_hint?: 'refresh_token' | 'access_token';
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  /** Seconds. */
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** The claims of the presented access token. */
export interface TokenValidation {
  active: true;
  client_id: string;
  sub: string;
  owner: string;
  scope: string;
  iss: string;
  aud: string | string[];
  exp: number;
  iat: number;
  jti: string;
}
