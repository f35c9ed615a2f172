import { Injectable } from '@nestjs/common';
import { FixedWindowCounter } from '../common/rate-limiter.js';
import { AppConfig } from '../config/config.js';
import { renewalsExhausted } from './agent-gateway.errors.js';
import { CaRepository } from './ca.repository.js';
import { CaService, type IssuedCertificate } from './ca.service.js';
import { WorkerCertificateEntity } from './entities/worker-certificate.entity.js';

/** Serial numbers compared as the integers they are: no leading zeros, lower case. */
export const normalizeSerial = (hex: string): string => hex.toLowerCase().replace(/^0+(?=.)/, '');

/** How many refused serials a replica remembers; past that the oldest are forgotten (and re-queried). */
const REFUSED_SERIALS_KEPT = 10_000;
/** Renewals one worker may make per renewal period (two thirds of WORKER_CERT_TTL): retries included. */
const RENEWALS_PER_PERIOD = 5;

/** Worker certificates: issued from CSRs, recorded, revoked with the worker. */
@Injectable()
export class CertificatesService {
  /**
   * Serials refused once stay refused: revocation, expiry and the binding to a worker id are never
   * undone, and a certificate is recorded before its agent receives it. So a refused certificate
   * that keeps reconnecting costs a set lookup, not a database query per attempt.
   */
  private readonly refused = new Set<string>();
  private readonly renewals: FixedWindowCounter;

  constructor(
    private readonly ca: CaService,
    private readonly repository: CaRepository,
    private readonly config: AppConfig,
  ) {
    // An agent renews once per period; a few retries fit, a loop signing certificates does not.
    this.renewals = new FixedWindowCounter(
      RENEWALS_PER_PERIOD,
      Math.max(1000, Math.floor((config.workerCertTtlMs * 2) / 3)),
    );
  }

  /** A renewal for an authenticated worker, within its renewal budget. */
  renew(workerId: string, csrPem: string): Promise<IssuedCertificate> {
    const wait = this.renewals.hit(workerId);
    if (wait > 0) return Promise.reject(renewalsExhausted(wait));
    return this.issue(workerId, csrPem);
  }

  async issue(workerId: string, csrPem: string): Promise<IssuedCertificate> {
    const issued = await this.ca.signWorkerCsr(csrPem, workerId, this.config.workerCertTtlMs);
    await this.repository.recordCertificate(
      Object.assign(new WorkerCertificateEntity(), {
        serial: normalizeSerial(issued.serial),
        workerId,
        notBefore: issued.notBefore,
        notAfter: issued.notAfter,
        certificate: issued.pem,
        revokedAt: null,
        createdAt: new Date(),
      }),
    );
    return issued;
  }

  /** Checked when a connection opens: issued by us to this worker, and not revoked. */
  async isValid(serial: string, workerId: string): Promise<boolean> {
    const key = `${normalizeSerial(serial)}/${workerId}`;
    if (this.refused.has(key)) return false;
    const cert = await this.repository.findValid(normalizeSerial(serial));
    const valid = cert !== null && cert.workerId === workerId && cert.notAfter.getTime() > Date.now();
    if (!valid) {
      if (this.refused.size >= REFUSED_SERIALS_KEPT) this.refused.delete(this.refused.values().next().value!);
      this.refused.add(key);
    }
    return valid;
  }

  async currentFor(workerId: string): Promise<string | undefined> {
    return (await this.repository.latestForWorker(workerId))?.certificate;
  }

  /** Whether certificates of this worker id were revoked: the worker was deleted. */
  wasRevoked(workerId: string): Promise<boolean> {
    return this.repository.hasRevoked(workerId);
  }

  checkCsr(csrPem: string): Promise<unknown> {
    return this.ca.checkCsr(csrPem);
  }

  revokeForWorker(workerId: string): Promise<string[]> {
    return this.repository.revokeForWorker(workerId);
  }
}
