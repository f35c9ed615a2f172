import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import {
  DerError,
  TAG,
  bitString,
  boolean,
  children,
  directoryString,
  expectTlv,
  explicit,
  octetString,
  oid,
  oidString,
  pem,
  sequence,
  set,
  time,
  tlv,
  unsignedInteger,
} from './der.js';

/** A worker's CSR, read and checked: its public key as the certificate will carry it. */
export interface CheckedCsr {
  /** The SubjectPublicKeyInfo, as the request holds it. */
  spki: Buffer;
  publicKey: KeyObject;
}

/** Why a CSR is refused; the message is the 422's. */
export class CsrRefused extends Error {}

const ECDSA_HASHES: Record<string, string> = {
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
};
const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

const PEM =
  /^\s*-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END (?:NEW )?CERTIFICATE REQUEST-----\s*$/;

/**
 * Reads a PEM PKCS#10 request and checks what the CA requires of it: an ECDSA P-256 key and a
 * valid self-signature. Throws CsrRefused with the reason.
 */
export function checkCsrPem(pem: string): CheckedCsr {
  const match = PEM.exec(pem);
  if (match === null) throw new CsrRefused('the CSR is not a PEM PKCS#10 request');
  const der = Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
  let info: Buffer;
  let spki: Buffer;
  let hash: string | undefined;
  let signature: Buffer;
  try {
    // CertificationRequest ::= SEQUENCE { certificationRequestInfo, signatureAlgorithm, signature }
    const outer = expectTlv(der, 0, TAG.sequence);
    if (outer.end !== der.length) throw new DerError('bytes after the request');
    const [cri, algorithm, sig, ...rest] = children(der, outer);
    if (cri?.tag !== TAG.sequence || algorithm?.tag !== TAG.sequence || sig?.tag !== TAG.bitString)
      throw new DerError('not a certification request');
    if (rest.length > 0) throw new DerError('extra elements');
    // CertificationRequestInfo ::= SEQUENCE { version 0, subject Name, subjectPKInfo, [0] attributes }
    const [version, subject, publicKeyInfo] = children(der, cri);
    if (version?.tag !== TAG.integer || subject?.tag !== TAG.sequence || publicKeyInfo?.tag !== TAG.sequence)
      throw new DerError('not a certification request info');
    info = der.subarray(cri.start, cri.end);
    spki = Buffer.from(der.subarray(publicKeyInfo.start, publicKeyInfo.end));
    const [algorithmId] = children(der, algorithm);
    if (algorithmId === undefined) throw new DerError('no signature algorithm');
    hash = ECDSA_HASHES[oidString(der, algorithmId)];
    if (sig.end === sig.body || der[sig.body] !== 0) throw new DerError('signature of partial bytes');
    signature = der.subarray(sig.body + 1, sig.end);
  } catch (err) {
    if (err instanceof DerError) throw new CsrRefused('the CSR is not a PEM PKCS#10 request');
    throw err;
  }
  let publicKey: KeyObject;
  try {
    publicKey = readPublicKey(spki);
  } catch {
    throw new CsrRefused('the CSR public key cannot be read');
  }
  if (publicKey.asymmetricKeyType !== 'ec' || publicKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new CsrRefused('the CSR key must be ECDSA P-256');
  let verified = false;
  try {
    verified = hash !== undefined && verify(hash, info, { key: publicKey, dsaEncoding: 'der' }, signature);
  } catch {
    // A malformed signature throws instead of failing.
  }
  if (!verified) throw new CsrRefused('the CSR signature does not verify');
  return { spki, publicKey };
}

/** The SubjectPublicKeyInfo of every uncompressed P-256 key, up to the point's coordinates. */
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d03010703420004', 'hex');

/**
 * A public key from its SubjectPublicKeyInfo. An uncompressed P-256 key (what agents send) is
 * imported from its coordinates: OpenSSL 3's generic decoder took 0.3-1.5 ms a key, the
 * coordinates half or less; both refuse a point off the curve.
 */
function readPublicKey(spki: Buffer): KeyObject {
  if (
    spki.length === P256_SPKI_PREFIX.length + 64 &&
    spki.subarray(0, P256_SPKI_PREFIX.length).equals(P256_SPKI_PREFIX)
  ) {
    const point = spki.subarray(P256_SPKI_PREFIX.length);
    return createPublicKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: point.subarray(0, 32).toString('base64url'),
        y: point.subarray(32).toString('base64url'),
      },
      format: 'jwk',
    });
  }
  return createPublicKey({ key: spki, format: 'der', type: 'spki' });
}

/** The subject Name of a DER certificate, as its bytes (to be the issuer of what it signs). */
export function certificateSubject(certificateDer: Uint8Array): Buffer {
  const cert = expectTlv(certificateDer, 0, TAG.sequence);
  const [tbs] = children(certificateDer, cert);
  if (tbs?.tag !== TAG.sequence) throw new DerError('not a certificate');
  const fields = children(certificateDer, tbs);
  // [0] version is optional (v1 certificates leave it out).
  const at = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = fields[at + 4];
  if (subject?.tag !== TAG.sequence) throw new DerError('no subject');
  return Buffer.from(certificateDer.subarray(subject.start, subject.end));
}

export interface WorkerCertificateFields {
  /** Positive, big-endian (hex). */
  serialHex: string;
  workerId: string;
  /** The worker's URI SAN. */
  uri: string;
  /** The CA's subject Name, DER. */
  issuer: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** The worker's SubjectPublicKeyInfo, DER. */
  spki: Buffer;
}

/**
 * The TBSCertificate of a worker's client certificate (X.509 v3): subject CN = the worker id,
 * basicConstraints CA:false (critical), keyUsage digitalSignature (critical), extKeyUsage
 * clientAuth, and the worker's URI as subjectAltName; signed with ECDSA over SHA-256.
 */
export function workerTbs(f: WorkerCertificateFields): Buffer {
  const extension = (id: string, critical: boolean, value: Buffer) =>
    sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
  return sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))),
    unsignedInteger(Buffer.from(f.serialHex, 'hex')),
    sequence(oid(OID.ecdsaWithSha256)),
    f.issuer,
    sequence(time(f.notBefore), time(f.notAfter)),
    sequence(set(sequence(oid(OID.commonName), directoryString(f.workerId)))),
    f.spki,
    explicit(
      3,
      sequence(
        extension(OID.basicConstraints, true, sequence()),
        // digitalSignature is bit 0: one byte, seven unused bits.
        extension(OID.keyUsage, true, tlv(TAG.bitString, Buffer.from([7, 0x80]))),
        extension(OID.extKeyUsage, false, sequence(oid(OID.clientAuth))),
        extension(OID.subjectAltName, false, sequence(tlv(0x86, Buffer.from(f.uri, 'latin1')))),
      ),
    ),
  );
}

/** A certificate: the TBSCertificate signed by the CA's P-256 key, as PEM. */
export function signCertificate(tbs: Buffer, caKey: KeyObject): string {
  const signature = sign('sha256', tbs, { key: caKey, dsaEncoding: 'der' });
  const der = sequence(tbs, sequence(oid(OID.ecdsaWithSha256)), bitString(signature));
  return pem('CERTIFICATE', der);
}
