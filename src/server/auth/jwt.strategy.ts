import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { decodeProtectedHeader } from 'jose';
import type { KeyObject } from 'node:crypto';
import { ExtractJwt, Strategy } from 'passport-jwt';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import { ClientsService } from './clients.service.js';
import { isCanonicalEs256Signature } from './es256.js';
import { JWT_ALG, SigningKeysService } from './signing-keys.service.js';
import { CLOCK_TOLERANCE_S, TokenCache } from './token-cache.js';

const ACCESS_TOKEN_TYP = /^(application\/)?at\+jwt$/i;

/** Thrown inside verification; the guard turns it into a 401 with this reason. */
export class TokenRejected extends Error {}

/**
 * passport-jwt with everything pinned: ES256 only, our issuer and audience, `typ: at+jwt`, a key
 * from our key set by `kid`. `alg: none`, HS256 signed with our public key, expired, not-yet-valid,
 * tampered and foreign tokens all fail here.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    keys: SigningKeysService,
    private readonly clients: ClientsService,
    private readonly tokens: TokenCache,
    config: AppConfig,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      algorithms: [JWT_ALG],
      issuer: config.publicUrl,
      audience: config.tokenAudience,
      jsonWebTokenOptions: { clockTolerance: CLOCK_TOLERANCE_S },
      // jsonwebtoken 9 verifies with a KeyObject; @types/passport-jwt only knows string | Buffer.
      secretOrKeyProvider: (_req: unknown, rawJwt: string, done: (err: unknown, key?: string) => void) => {
        let header: ReturnType<typeof decodeProtectedHeader>;
        try {
          header = decodeProtectedHeader(rawJwt);
        } catch {
          return done(new TokenRejected('malformed token'));
        }
        if (header.alg !== JWT_ALG)
          return done(new TokenRejected(`algorithm ${String(header.alg)} is not accepted`));
        if (typeof header.typ !== 'string' || !ACCESS_TOKEN_TYP.test(header.typ)) {
          return done(new TokenRejected('not an access token (typ must be at+jwt)'));
        }
        if (typeof header.kid !== 'string') return done(new TokenRejected('no key id'));
        if (!isCanonicalEs256Signature(rawJwt.slice(rawJwt.lastIndexOf('.') + 1)))
          return done(new TokenRejected('malformed or non-canonical signature'));
        keys.verificationKey(header.kid).then(
          (key?: KeyObject) =>
            key ? done(null, key as unknown as string) : done(new TokenRejected('unknown signing key')),
          (err: unknown) => done(err),
        );
      },
    });
  }

  async validate(payload: Record<string, unknown>): Promise<Caller> {
    const { client_id: clientId, owner, scope, jti, sub, exp, iat } = payload;
    if (
      typeof clientId !== 'string' ||
      typeof owner !== 'string' ||
      typeof scope !== 'string' ||
      typeof jti !== 'string' ||
      typeof sub !== 'string' ||
      typeof exp !== 'number' ||
      typeof iat !== 'number'
    ) {
      throw new TokenRejected('required claims are missing');
    }
    // Tokens issued before families were named in them carry no `sid`.
    if (typeof payload.sid === 'string' && this.tokens.isFamilyRevoked(payload.sid))
      throw new TokenRejected('the grant of this token was revoked');
    if (!(await this.clients.isActive(clientId)))
      throw new TokenRejected('the client no longer exists or is disabled');
    return { clientId, owner, scopes: scope.split(' ').filter(Boolean), claims: payload };
  }
}
