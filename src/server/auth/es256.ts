/**
 * ES256 signatures in their one canonical form. ECDSA signatures are malleable: when (r, s) is
 * valid, so is (r, n - s). Tokens are identified by more than their bytes (jti), but a verifier
 * that accepts both forms lets anyone mint a second, different-looking copy of a token, which
 * defeats deny lists or caches keyed by the token text. So the service signs only low-S
 * (s <= n/2, as Bitcoin's BIP 62 and libsecp256k1 do) and refuses everything else.
 */

/** The order of the P-256 group. */
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const HALF_N = N / 2n;
const BASE64URL_64_BYTES = /^[A-Za-z0-9_-]{86}$/;
const bytes32 = (n: bigint): Buffer => Buffer.from(n.toString(16).padStart(64, '0'), 'hex');
const N_BYTES = bytes32(N);
const HALF_N_BYTES = bytes32(HALF_N);
const ZERO = Buffer.alloc(32);

const toBigInt = (bytes: Buffer): bigint => BigInt(`0x${bytes.toString('hex') || '0'}`);

/** Whether a JWS signature segment is a well-formed, low-S ES256 signature (r and s in 1..n-1). */
export function isCanonicalEs256Signature(segment: string): boolean {
  if (!BASE64URL_64_BYTES.test(segment)) return false;
  const raw = Buffer.from(segment, 'base64url');
  // 86 characters carry 516 bits: the last character's two spare bits must be zero.
  if (raw.length !== 64 || raw.toString('base64url') !== segment) return false;
  // Big-endian byte comparison: on the verification hot path, no BigInt parsing.
  const r = raw.subarray(0, 32);
  const s = raw.subarray(32);
  return !r.equals(ZERO) && r.compare(N_BYTES) < 0 && !s.equals(ZERO) && s.compare(HALF_N_BYTES) <= 0;
}

/** The compact JWS with its ES256 signature in low-S form (the same token when it already is). */
export function withLowS(jws: string): string {
  const dot = jws.lastIndexOf('.');
  const raw = Buffer.from(jws.slice(dot + 1), 'base64url');
  const s = toBigInt(raw.subarray(32));
  if (s <= HALF_N) return jws;
  const low = Buffer.from((N - s).toString(16).padStart(64, '0'), 'hex');
  return `${jws.slice(0, dot + 1)}${Buffer.concat([raw.subarray(0, 32), low]).toString('base64url')}`;
}
