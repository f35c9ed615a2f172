import { Body, Controller, Get, Header, Headers, HttpCode, Post } from '@nestjs/common';
import { Consumes } from '../common/media-type.js';
import { Public } from './auth.decorators.js';
import type { TokenResponse } from '../../contracts/api/oauth.js';
import { AuthService, type TokenRequestBody } from './auth.service.js';
import { SigningKeysService } from './signing-keys.service.js';
import { AppConfig } from '../config/config.js';
import { authorizationServerMetadata, protectedResourceMetadata } from './oauth-metadata.js';

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
  token(@Body() body: unknown, @Headers('authorization') authorization?: string): Promise<TokenResponse> {
    const fields =
      body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as TokenRequestBody) : {};
    return this.auth.token(fields, authorization);
  }

  /** RFC 7009: 200 with no body whether or not the token was live; the console's sign-out. */
  @Post('oauth/revoke')
  @HttpCode(200)
  @Consumes('application/json', 'application/x-www-form-urlencoded')
  async revoke(@Body() body: unknown): Promise<void> {
    const fields =
      body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as TokenRequestBody) : {};
    await this.auth.revoke(fields);
  }

  @Get('.well-known/jwks.json')
  @Header('Cache-Control', 'public, max-age=60')
  jwks() {
    return this.keys.jwks();
  }

  /** RFC 8414, for clients (MCP ones among them) that discover the token endpoint. */
  @Get('.well-known/oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  authorizationServer() {
    return authorizationServerMetadata(this.config.publicUrl);
  }

  /** RFC 9728: named in every 401's WWW-Authenticate as resource_metadata. */
  @Get('.well-known/oauth-protected-resource')
  @Header('Cache-Control', 'public, max-age=300')
  protectedResource() {
    return protectedResourceMetadata(this.config.publicUrl);
  }
}
