import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

x509.cryptoProvider.set(webcrypto as never);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

const pkcs8Pem = async (key: webcrypto.CryptoKey): Promise<string> => {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trim()}\n-----END PRIVATE KEY-----\n`;
};

/** A CA of the test's own and one certificate from it, with `extensions`. */
async function caAndCertificate(
  caName: string,
  subject: string,
  extensions: x509.Extension[],
): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${caName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    keys: caKeys,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject,
    issuer: ca.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    extensions,
  });
  return {
    caPem: ca.toString('pem'),
    certPem: cert.toString('pem'),
    keyPem: await pkcs8Pem(keys.privateKey),
  };
}

/** A CA of the test's own, and a client certificate from it: what an impostor agent would have. */
export function foreignClientCertificate(
  commonName: string,
): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  return caAndCertificate('impostor CA', `CN=${commonName}`, [
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
  ]);
}

/** A CA of the test's own, and a server certificate from it naming exactly `dnsNames`. */
export function serverCertificate(
  dnsNames: string[],
): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  return caAndCertificate('test CA', 'CN=server', [
    new x509.SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: 'dns', value }))),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
  ]);
}
