import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { KeyObject, X509Certificate, createPrivateKey, generateKeyPairSync, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import { readTlv, time, unsignedInteger } from '../../src/server/agent-gateway/der.js';
import {
  CsrRefused,
  certificateSubject,
  checkCsrPem,
  signCertificate,
  workerTbs,
} from '../../src/server/agent-gateway/worker-certificate.js';

x509.cryptoProvider.set(webcrypto as never);
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
const pem = (label: string, bytes: Buffer) =>
  `-----BEGIN ${label}-----\n${bytes.toString('base64')}\n-----END ${label}-----\n`;

async function ca() {
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=test agent CA 0a1b2c3d',
    notBefore: new Date('2026-01-01T00:00:00Z'),
    notAfter: new Date('2036-01-01T00:00:00Z'),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { keys, cert, key: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }) };
}

/** The TBSCertificate's bytes of a DER certificate. */
function tbsOf(certificate: Buffer): Buffer {
  const outer = readTlv(certificate, 0);
  const tbs = readTlv(certificate, outer.body);
  return certificate.subarray(tbs.start, tbs.end);
}

describe('worker certificates in DER', () => {
  it('writes the same TBSCertificate as @peculiar/x509 for the same fields', async () => {
    const { keys, cert: caCert, key } = await ca();
    const { csrPem } = await newKeyAndCsr('worker');
    const csr = new x509.Pkcs10CertificateRequest(csrPem);
    const workerId = '3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b';
    const uri = `urn:stack-orchestrator:worker:${workerId}`;
    const notBefore = new Date('2026-11-28T10:00:00Z');
    const notAfter = new Date('2027-02-26T10:00:00Z');
    const serialHex = '5a0102030405060708090a0b0c0d0e0f';
    const reference = await x509.X509CertificateGenerator.create({
      serialNumber: serialHex,
      subject: `CN=${workerId}`,
      issuer: caCert.subject,
      notBefore,
      notAfter,
      signingAlgorithm: ALGORITHM,
      publicKey: csr.publicKey,
      signingKey: keys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: uri }]),
      ],
    });
    const checked = checkCsrPem(csrPem);
    const tbs = workerTbs({
      serialHex,
      workerId,
      uri,
      issuer: certificateSubject(Buffer.from(caCert.rawData)),
      notBefore,
      notAfter,
      spki: checked.spki,
    });
    expect(tbs.toString('hex')).toBe(tbsOf(Buffer.from(reference.rawData)).toString('hex'));

    // Signed, Node reads it, it verifies against the CA, and it names the worker.
    const issued = new X509Certificate(signCertificate(tbs, key));
    const caX509 = new X509Certificate(Buffer.from(caCert.rawData));
    expect(issued.verify(caX509.publicKey)).toBe(true);
    expect(issued.checkIssued(caX509)).toBe(true);
    expect(issued.subject).toBe(`CN=${workerId}`);
    expect(issued.subjectAltName).toBe(`URI:${uri}`);
    expect(issued.serialNumber.toLowerCase()).toBe(serialHex);
    expect(issued.publicKey.equals(checked.publicKey)).toBe(true);
    expect(issued.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(issued.ca).toBe(false);
  });

  it('refuses what is not a valid P-256 request, with the reason', async () => {
    const { csrPem } = await newKeyAndCsr('x');
    expect(checkCsrPem(csrPem).publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    const refused = (text: string) => {
      try {
        checkCsrPem(text);
      } catch (err) {
        if (err instanceof CsrRefused) return err.message;
        throw err;
      }
      return 'accepted';
    };
    expect(refused('x'.repeat(200))).toBe('the CSR is not a PEM PKCS#10 request');
    expect(refused(pem('CERTIFICATE', der(csrPem)))).toBe('the CSR is not a PEM PKCS#10 request');
    // Truncated, or with bytes after it.
    expect(refused(pem('CERTIFICATE REQUEST', der(csrPem).subarray(0, 60)))).toBe(
      'the CSR is not a PEM PKCS#10 request',
    );
    expect(refused(pem('CERTIFICATE REQUEST', Buffer.concat([der(csrPem), Buffer.from([0])])))).toBe(
      'the CSR is not a PEM PKCS#10 request',
    );
    // A length claiming more than there is, and an indefinite length.
    const long = der(csrPem);
    long[1] = 0x84;
    expect(refused(pem('CERTIFICATE REQUEST', long))).toBe('the CSR is not a PEM PKCS#10 request');
    // A flipped byte in the signed part: the point no longer lies on the curve, or the signature fails.
    const flipped = der(csrPem);
    flipped[40] ^= 0xff;
    expect(refused(pem('CERTIFICATE REQUEST', flipped))).toMatch(
      /^the CSR (public key cannot be read|signature does not verify)$/,
    );
    // A point off the curve (its last byte changed) is refused when the key is read.
    const offCurve = der(csrPem);
    const point = offCurve.indexOf(Buffer.from('03420004', 'hex')) + 4;
    expect(point).toBeGreaterThan(4);
    offCurve[point + 63] ^= 0x01;
    expect(refused(pem('CERTIFICATE REQUEST', offCurve))).toBe('the CSR public key cannot be read');
    const subjectFlipped = der(csrPem);
    subjectFlipped[20] ^= 0x01;
    expect(refused(pem('CERTIFICATE REQUEST', subjectFlipped))).toMatch(/^the CSR (is not|signature)/);
    // Another curve, and another key type.
    for (const [type, options] of [
      ['ec', { namedCurve: 'P-384' }],
      ['ed25519', {}],
    ] as const) {
      const pair = generateKeyPairSync(type as 'ec', options as { namedCurve: string });
      const other = await csrFor(pair.privateKey, pair.publicKey, type === 'ec' ? 'ECDSA' : 'Ed25519');
      expect(refused(other)).toBe('the CSR key must be ECDSA P-256');
    }
  });

  it('encodes integers and times as DER requires', () => {
    expect(unsignedInteger(Buffer.from('00000102', 'hex')).toString('hex')).toBe('02020102');
    expect(unsignedInteger(Buffer.from('80', 'hex')).toString('hex')).toBe('02020080');
    expect(unsignedInteger(Buffer.from('007f', 'hex')).toString('hex')).toBe('02017f');
    expect(time(new Date('2049-12-31T23:59:59.900Z')).toString('latin1')).toBe('\x17\x0d491231235959Z');
    expect(time(new Date('2050-01-01T00:00:00Z')).toString('latin1')).toBe('\x18\x0f20500101000000Z');
  });
});

/** A PKCS#10 request over another key, made by @peculiar/x509. */
async function csrFor(
  privateKey: KeyObject,
  publicKey: KeyObject,
  name: 'ECDSA' | 'Ed25519',
): Promise<string> {
  const algorithm =
    name === 'ECDSA' ? { name, namedCurve: 'P-384', hash: 'SHA-384' } : ({ name } as { name: string });
  const keys = {
    privateKey: await webcrypto.subtle.importKey(
      'pkcs8',
      privateKey.export({ format: 'der', type: 'pkcs8' }),
      algorithm,
      false,
      ['sign'],
    ),
    publicKey: await webcrypto.subtle.importKey(
      'spki',
      publicKey.export({ format: 'der', type: 'spki' }),
      algorithm,
      true,
      ['verify'],
    ),
  };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: 'CN=other',
    keys,
    signingAlgorithm: algorithm,
  });
  return csr.toString('pem');
}
