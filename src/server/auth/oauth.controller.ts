import { Body, Controller, Get, Header, Headers, HttpCode, Post } from '@nestjs/common';
import { Consumes } from '../common/media-type.js';
import { Public } from './auth.decorators.js';
import type { TokenResponse } from '../../contracts/api/oauth.js';
import { AuthService, type TokenRequestBody } from './auth.service.js';
import { SigningKeysService } from './signing-keys.service.js';
import { AppConfig } from '../config/config.js';
import { authorizationServerMetadata, protectedResourceMetadata } from './oauth-metadata.js';
import { ApiDoc, jsonAnswer } from '../openapi/api-doc.js';
import type {
  AuthorizationServerMetadata,
  JsonWebKeySet,
  ProtectedResourceMetadata,
} from '../../contracts/api/well-known.js';

/** The OAuth 2.0 token endpoint and the published key set, at the service root. */
@Controller()
@Public()
export class OAuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly keys: SigningKeysService,
    private readonly config: AppConfig,
  ) {}

  @Post('oauth/token')
  @HttpCode(200)
  @Consumes('application/json', 'application/x-www-form-urlencoded')
  @Header('Pragma', 'no-cache')
  @ApiDoc({
    summary: 'Issue an access token',
    description:
      'RFC 6749: `client_credentials` or `refresh_token`, as JSON or as a form; the client authenticates in the body or with HTTP Basic. Errors are RFC 6749 bodies, not problems.',
    tag: 'OAuth',
    body: 'TokenRequest',
    responses: {
      200: 'TokenResponse',
      400: jsonAnswer(
        'OAuthError',
        'invalid_request, invalid_grant, invalid_scope or unsupported_grant_type.',
      ),
      401: jsonAnswer('OAuthError', 'invalid_client: client authentication failed.'),
      429: jsonAnswer(
        'OAuthError',
        'temporarily_unavailable: too many failed attempts from this address; see `Retry-After`.',
      ),
    },
  })
  token(@Body() body: unknown, @Headers('authorization') authorization?: string): Promise<TokenResponse> {
    const fields =
      body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as TokenRequestBody) : {};
    return this.auth.token(fields, authorization);
  }

  /** RFC 7009: 200 with no body whether or not the token was live; the console's sign-out. */
  @Post('oauth/revoke')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Revoke a refresh token and its family (RFC 7009)',
    description:
      "Ends one sign-in: every refresh token of the presented token's family is revoked; the client's other sign-ins keep theirs. 200 whether or not the token was live. Access tokens are refused (`unsupported_token_type`): they expire on their own.",
    tag: 'OAuth',
    body: 'RevokeRequest',
    responses: {
      200: null,
      400: jsonAnswer(
        'OAuthError',
        'invalid_request (no token) or unsupported_token_type (an access token).',
      ),
    },
  })
  @Consumes('application/json', 'application/x-www-form-urlencoded')
  async revoke(@Body() body: unknown): Promise<void> {
    const fields =
      body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as TokenRequestBody) : {};
    await this.auth.revoke(fields);
  }

  @Get('.well-known/jwks.json')
  @Header('Cache-Control', 'public, max-age=60')
  @ApiDoc({
    summary: 'The public keys that verify access tokens (RFC 7517)',
    tag: 'OAuth',
    responses: { 200: 'JsonWebKeySet' },
  })
  jwks(): JsonWebKeySet {
    return this.keys.jwks();
  }

  /** RFC 8414, for clients (MCP ones among them) that discover the token endpoint. */
  @Get('.well-known/oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiDoc({
    summary: 'Authorization server metadata (RFC 8414)',
    tag: 'OAuth',
    responses: { 200: 'AuthorizationServerMetadata' },
  })
  authorizationServer(): AuthorizationServerMetadata {
    return authorizationServerMetadata(this.config.publicUrl);
  }

  /** RFC 9728: named in every 401's WWW-Authenticate as resource_metadata. */
  @Get('.well-known/oauth-protected-resource')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiDoc({
    summary: 'Protected resource metadata (RFC 9728)',
    tag: 'OAuth',
    responses: { 200: 'ProtectedResourceMetadata' },
  })
  protectedResource(): ProtectedResourceMetadata {
    return protectedResourceMetadata(this.config.publicUrl);
  }
}
