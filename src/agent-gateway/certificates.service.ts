import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config.js';
import { CaRepository } from './ca.repository.js';
import { CaService, type IssuedCertificate } from './ca.service.js';
import { WorkerCertificateEntity } from './entities/worker-certificate.entity.js';

/** Serial numbers compared as the integers they are: no leading zeros, lower case. */
export const normalizeSerial = (hex: string): string => hex.toLowerCase().replace(/^0+(?=.)/, '');

/** Worker certificates: issued from CSRs, recorded, revoked with the worker. */
@Injectable()
export class CertificatesService {
  constructor(
    private readonly ca: CaService,
    private readonly repository: CaRepository,
    private readonly config: AppConfig,
  ) {}

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
    const cert = await this.repository.findValid(normalizeSerial(serial));
    return cert !== null && cert.workerId === workerId && cert.notAfter.getTime() > Date.now();
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
