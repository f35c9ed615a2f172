import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { KeyObject, createHash, randomBytes, webcrypto } from 'node:crypto';
import { SecretBox } from '../common/secret-box.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { CaRepository } from './ca.repository.js';
import { invalidCsr } from './agent-gateway.errors.js';
import { pem } from './der.js';
import {
  CsrRefused,
  certificateSubject,
  checkCsrPem,
  signCertificate,
  workerTbs,
  type CheckedCsr,
} from './worker-certificate.js';

// @peculiar/x509 wants the DOM Crypto type; Node's webcrypto is that implementation.
x509.cryptoProvider.set(webcrypto as never);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const CA_NAME = 'agents';
const CA_LIFETIME_MS = 10 * 365 * 86_400_000;
const SERVER_CERT_LIFETIME_MS = 365 * 86_400_000;
/** Certificates start a little in the past so clocks a few minutes apart still agree. */
const BACKDATE_MS = 5 * 60_000;

export interface IssuedCertificate {
  pem: string;
  serial: string;
  notBefore: Date;
  notAfter: Date;
}

export const workerUri = (workerId: string): string => `urn:stack-orchestrator:worker:${workerId}`;

/**
 * The agents' certificate authority: an ECDSA P-256 CA created at first start, its private key
 * sealed by SecretBox in PostgreSQL (so every replica signs with the same CA). Issues the gateway's
 * server certificate and one client certificate per worker, bound to the worker id (subject CN and
 * a URI SAN).
 */
@Injectable()
export class CaService implements OnModuleInit {
  private readonly logger = new Logger('pki');
  private caCert!: x509.X509Certificate;
  private caKey!: CryptoKey;
  /** The same key for node:crypto, which signs the workers' certificates. */
  private caSigningKey!: KeyObject;
  /** The CA certificate's subject Name, DER: the issuer of what it signs. */
  private caSubject!: Buffer;
  /** SHA-256 over the CA certificate's DER, lower-case hex. */
  fingerprint = '';

  constructor(
    private readonly repository: CaRepository,
    private readonly secrets: SecretBox,
    health: OrchestratorHealthService,
  ) {
    health.registerCaFingerprint(() => this.fingerprint || null);
  }

  async onModuleInit(): Promise<void> {
    const created = await this.repository.ensure(CA_NAME, () => this.createCa());
    const row = await this.repository.get(CA_NAME);
    if (!row) throw new Error('the agent CA is missing after creation');
    this.caCert = new x509.X509Certificate(row.certificate);
    let pkcs8: string;
    try {
      pkcs8 = this.secrets.decrypt(row.privateKeyEnc, `ca:${CA_NAME}`);
    } catch {
      throw new Error(
        'the agent CA key cannot be decrypted: ENCRYPTION_KEY (or DATA_DIR/secrets/master.key) is not the one it was sealed with',
      );
    }
    this.caKey = await webcrypto.subtle.importKey('pkcs8', pemBody(pkcs8), ALGORITHM, false, ['sign']);
    this.caSigningKey = KeyObject.from(this.caKey);
    this.caSubject = certificateSubject(Buffer.from(this.caCert.rawData));
    this.fingerprint = row.fingerprint;
    if (created) this.logger.log({ fingerprint: this.fingerprint }, 'agent CA created');
  }

  get caPem(): string {
    return this.caCert.toString('pem');
  }

  /** A certificate and key for the gateway's TLS listener, for the names agents dial. */
  async issueServerCertificate(hosts: string[]): Promise<{ certPem: string; keyPem: string }> {
    const keys = await generateKeys();
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${hosts[0]}`,
      issuer: this.caCert.subject,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + SERVER_CERT_LIFETIME_MS),
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: this.caKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(
          hosts.map((h) => (/^[\d.]+$|:/.test(h) ? { type: 'ip', value: h } : { type: 'dns', value: h })),
        ),
      ],
    });
    return { certPem: cert.toString('pem'), keyPem: await exportPkcs8(keys.privateKey) };
  }

  /**
   * Signs a worker's CSR. The CSR must carry a valid self-signature over an ECDSA P-256 key; its
   * subject is ignored: the certificate names the worker id the service assigned. Read and written
   * with node:crypto and a few DER helpers (worker-certificate.ts), the same bytes @peculiar/x509
   * wrote at a fifth of the CPU (docs/workers.md, "Enrollment cost").
   */
  signWorkerCsr(csrPem: string, workerId: string, lifetimeMs: number): IssuedCertificate {
    const csr = this.checkCsr(csrPem);
    const now = Date.now();
    // Backdated for clock skew, but never by more than a tenth of the lifetime: agents renew at two
    // thirds of notBefore..notAfter, which must stay in the future for short-lived certificates.
    const notBefore = new Date(now - Math.min(BACKDATE_MS, lifetimeMs / 10));
    const notAfter = new Date(now + lifetimeMs);
    const serialNumber = serial();
    const tbs = workerTbs({
      serialHex: serialNumber,
      workerId,
      uri: workerUri(workerId),
      issuer: this.caSubject,
      notBefore,
      notAfter,
      spki: csr.spki,
    });
    return { pem: signCertificate(tbs, this.caSigningKey), serial: serialNumber, notBefore, notAfter };
  }

  /** Parses a CSR and checks its key type and self-signature; a 422 otherwise. */
  checkCsr(csrPem: string): CheckedCsr {
    try {
      return checkCsrPem(csrPem);
    } catch (err) {
      throw err instanceof CsrRefused ? invalidCsr(err.message) : err;
    }
  }

  private async createCa(): Promise<{ certificate: string; privateKeyEnc: string; fingerprint: string }> {
    const keys = await generateKeys();
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=stack-orchestrator agent CA ${randomBytes(4).toString('hex')}`,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + CA_LIFETIME_MS),
      signingAlgorithm: ALGORITHM,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return {
      certificate: cert.toString('pem'),
      privateKeyEnc: this.secrets.encrypt(await exportPkcs8(keys.privateKey), `ca:${CA_NAME}`),
      fingerprint: createHash('sha256').update(Buffer.from(cert.rawData)).digest('hex'),
    };
  }
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

async function exportPkcs8(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return pem('PRIVATE KEY', der);
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

/** 128-bit positive serial, hex. */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}
