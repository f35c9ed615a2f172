import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createHash, webcrypto } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

x509.cryptoProvider.set(webcrypto as never);
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** What the agent keeps in its data directory between runs. */
export interface Identity {
  workerId: string;
  enrollmentSecret: string;
  agentEndpoint: string;
  keyPem: string;
  caPem: string;
  certPem: string | null;
}

interface IdentityFile {
  worker_id: string;
  enrollment_secret: string;
  agent_endpoint: string;
}

/** The files of the identity, in the data directory. */
export const IDENTITY_FILES = ['identity.json', 'key.pem', 'cert.pem', 'ca.pem'] as const;

/** The data directory: key.pem, cert.pem, ca.pem and identity.json, all 0600. */
export class IdentityStore {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private path(name: string): string {
    return join(this.dir, name);
  }

  load(): Identity | undefined {
    if (!existsSync(this.path('identity.json')) || !existsSync(this.path('key.pem'))) return undefined;
    const file = JSON.parse(readFileSync(this.path('identity.json'), 'utf8')) as IdentityFile;
    return {
      workerId: file.worker_id,
      enrollmentSecret: file.enrollment_secret,
      agentEndpoint: file.agent_endpoint,
      keyPem: readFileSync(this.path('key.pem'), 'utf8'),
      caPem: readFileSync(this.path('ca.pem'), 'utf8'),
      certPem: existsSync(this.path('cert.pem')) ? readFileSync(this.path('cert.pem'), 'utf8') : null,
    };
  }

  save(identity: Identity): void {
    this.writePrivate('key.pem', identity.keyPem);
    // Public material, but the data directory keeps to one rule: nothing in it is for other users.
    this.writePrivate('ca.pem', identity.caPem);
    if (identity.certPem) this.writePrivate('cert.pem', identity.certPem);
    const file: IdentityFile = {
      worker_id: identity.workerId,
      enrollment_secret: identity.enrollmentSecret,
      agent_endpoint: identity.agentEndpoint,
    };
    this.writePrivate('identity.json', JSON.stringify(file, null, 2));
  }

  /** Forgets the worker identity (after the service revoked it); the next start enrolls again. */
  wipe(): void {
    for (const name of IDENTITY_FILES) rmSync(this.path(name), { force: true });
  }

  private writePrivate(name: string, content: string): void {
    writeFileSync(this.path(name), content, { mode: 0o600 });
    chmodSync(this.path(name), 0o600);
  }
}

/** A new P-256 key and a CSR for it (the service ignores the subject and names the worker id). */
export async function newKeyAndCsr(commonName: string): Promise<{ keyPem: string; csrPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${commonName.replace(/[,=+<>#;"\\]/g, '_')}`,
    keys,
    signingAlgorithm: ALGORITHM,
  });
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trim()}\n-----END PRIVATE KEY-----\n`;
  return { keyPem, csrPem: csr.toString('pem') };
}

/** SHA-256 over the certificate's DER, lower-case hex: the CA fingerprint `info` publishes. */
export function certificateFingerprint(pem: string): string {
  return createHash('sha256')
    .update(Buffer.from(new x509.X509Certificate(pem).rawData))
    .digest('hex');
}

export function certificateValidity(pem: string): { notBefore: Date; notAfter: Date } {
  const cert = new x509.X509Certificate(pem);
  return { notBefore: cert.notBefore, notAfter: cert.notAfter };
}
