import type { NestExpressApplication } from '@nestjs/platform-express';
import { SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { DataSource } from 'typeorm';
import { withLowS } from '../../src/server/auth/es256.js';
import { SecretBox } from '../../src/server/common/secret-box.js';

/** The service's own signing key, unsealed the way the service does: for crafting edge-case tokens. */
export async function serviceSigningKey(
  app: NestExpressApplication,
): Promise<{ kid: string; key: KeyObject }> {
  const rows = await app
    .get(DataSource)
    .query<{ kid: string; private_key_enc: string }[]>(
      'SELECT kid, private_key_enc FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC LIMIT 1',
    );
  const pem = app.get(SecretBox).decrypt(rows[0].private_key_enc, `signing-key:${rows[0].kid}`);
  return { kid: rows[0].kid, key: createPrivateKey(pem) };
}

export const foreignKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

/** A token as the service would sign it: in low-S form, the only one it accepts. */
export async function sign(key: KeyObject, header: JWTHeaderParameters, claims: JWTPayload): Promise<string> {
  const jws = await new SignJWT(claims).setProtectedHeader(header).sign(key);
  return header.alg === 'ES256' ? withLowS(jws) : jws;
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token with `alg: none` and no signature. */
export const unsignedToken = (claims: JWTPayload, kid: string): string =>
  `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${b64(claims)}.`;
