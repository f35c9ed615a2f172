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
/** How many valid certificates a replica remembers (read at start, and at each connect's check). */
const VALID_SERIALS_KEPT = 100_000;
/** A remembered valid certificate is read again after this long (or at its expiry, if sooner). */
const VALID_FOR_MS = 10 * 60_000;
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
  /**
   * Certificates found valid, by `serial/workerId`: until when (ms) that answer is reused without a
   * query, at most VALID_FOR_MS and never past the certificate's expiry. Filled at start with one
   * query, so a fleet reconnecting after a restart costs no lookup per connection. A worker deleted
   * through another replica keeps its entry here until then, which is safe: its stream's hello
   * reads the worker row (gone) and renewals check afresh (`fresh`).
   */
  private readonly valid = new Map<string, number>();
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
    const issued = this.ca.signWorkerCsr(csrPem, workerId, this.config.workerCertTtlMs);
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
    // Recorded and ours: its first connection (a new node dials at once) needs no lookup. What a
    // deletion racing this issue leaves is what warm() leaves: the hello reads the worker (gone).
    this.remember(`${normalizeSerial(issued.serial)}/${workerId}`, issued.notAfter);
    return issued;
  }

  /**
   * Checked when a connection opens: issued by us to this worker, and not revoked. `fresh` reads
   * the database whatever this replica remembers (before signing anything for the caller).
   */
  async isValid(serial: string, workerId: string, { fresh = false } = {}): Promise<boolean> {
    const key = `${normalizeSerial(serial)}/${workerId}`;
    if (this.refused.has(key)) return false;
    const until = this.valid.get(key);
    if (!fresh && until !== undefined && until > Date.now()) return true;
    const cert = await this.repository.findValid(normalizeSerial(serial));
    const valid = cert !== null && cert.workerId === workerId && cert.notAfter.getTime() > Date.now();
    if (valid) this.remember(key, cert.notAfter);
    else {
      this.valid.delete(key);
      if (this.refused.size >= REFUSED_SERIALS_KEPT) this.refused.delete(this.refused.values().next().value!);
      this.refused.add(key);
    }
    return valid;
  }

  /** Reads every valid certificate at once (at start, before agents connect). */
  async warm(): Promise<number> {
    const certs = await this.repository.allValid(VALID_SERIALS_KEPT);
    for (const c of certs.reverse()) this.remember(`${normalizeSerial(c.serial)}/${c.workerId}`, c.notAfter);
    return certs.length;
  }

  private remember(key: string, notAfter: Date): void {
    this.valid.delete(key);
    if (this.valid.size >= VALID_SERIALS_KEPT) this.valid.delete(this.valid.keys().next().value!);
    this.valid.set(key, Math.min(notAfter.getTime(), Date.now() + VALID_FOR_MS));
  }

  async currentFor(workerId: string): Promise<string | undefined> {
    return (await this.repository.latestForWorker(workerId))?.certificate;
  }

  /** Whether certificates of this worker id were revoked: the worker was deleted. */
  wasRevoked(workerId: string): Promise<boolean> {
    return this.repository.hasRevoked(workerId);
  }

  checkCsr(csrPem: string): void {
    this.ca.checkCsr(csrPem);
  }

  async revokeForWorker(workerId: string): Promise<string[]> {
    const serials = await this.repository.revokeForWorker(workerId);
    for (const serial of serials) this.valid.delete(`${normalizeSerial(serial)}/${workerId}`);
    return serials;
  }
}
