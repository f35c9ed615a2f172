import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isCanonicalEs256Signature, withLowS } from './es256.js';

const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const sOf = (segment: string): bigint =>
  BigInt(`0x${Buffer.from(segment, 'base64url').subarray(32).toString('hex')}`);

describe('ES256 low-S signatures', () => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicKey = createPublicKey(privateKey);
  const signingInput = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0';
  const jws = (): string =>
    `${signingInput}.${sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  const verifies = (token: string): boolean =>
    verify(
      'sha256',
      Buffer.from(signingInput),
      { key: publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(token.split('.')[2], 'base64url'),
    );

  it('turns every signature into a low-S one that still verifies', () => {
    let sawHigh = false;
    for (let i = 0; i < 64; i++) {
      const token = jws();
      sawHigh ||= sOf(token.split('.')[2]) > N / 2n;
      const low = withLowS(token);
      expect(sOf(low.split('.')[2]) <= N / 2n).toBe(true);
      expect(verifies(low)).toBe(true);
      expect(isCanonicalEs256Signature(low.split('.')[2])).toBe(true);
    }
    // OpenSSL does not normalize: about half of 64 signatures were high-S before the conversion.
    expect(sawHigh).toBe(true);
  });

  it('refuses the high-S twin of a valid signature, and malformed segments', () => {
    const low = withLowS(jws()).split('.')[2];
    const raw = Buffer.from(low, 'base64url');
    const high = Buffer.concat([
      raw.subarray(0, 32),
      Buffer.from((N - sOf(low)).toString(16).padStart(64, '0'), 'hex'),
    ]).toString('base64url');
    expect(verifies(`${signingInput}.${high}`)).toBe(true);
    expect(isCanonicalEs256Signature(high)).toBe(false);
    for (const bad of ['', low.slice(1), `${low}A`, `${low.slice(0, 85)}+`, 'A'.repeat(86)]) {
      expect(isCanonicalEs256Signature(bad)).toBe(false);
    }
  });
});
