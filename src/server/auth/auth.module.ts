import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TokenCache } from './token-cache.js';
import { PassportModule } from '@nestjs/passport';
import { AccessGuard } from './access.guard.js';
import { AuthController } from './auth.controller.js';
import { AuthService } from './auth.service.js';
import { BasicCredentials } from './basic-credentials.js';
import { ClientsRepository } from './clients.repository.js';
import { ClientsService } from './clients.service.js';
import { JwtStrategy } from './jwt.strategy.js';
import { OAuthController } from './oauth.controller.js';
import { RateLimitsService } from './rate-limits.service.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { SigningKeysRepository } from './signing-keys.repository.js';
import { SigningKeysService } from './signing-keys.service.js';

@Module({
  imports: [PassportModule],
  controllers: [OAuthController, AuthController],
  providers: [
    AuthService,
    ClientsService,
    BasicCredentials,
    SigningKeysService,
    RateLimitsService,
    JwtStrategy,
    TokenCache,
    ClientsRepository,
    RefreshTokensRepository,
    SigningKeysRepository,
    { provide: APP_GUARD, useClass: AccessGuard },
  ],
  exports: [AuthService, ClientsService, RateLimitsService, TokenCache],
})
export class AuthModule {}
