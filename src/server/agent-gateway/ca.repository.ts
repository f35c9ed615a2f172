import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Not, Repository } from 'typeorm';
import { CertificateAuthorityEntity } from './entities/certificate-authority.entity.js';
import { WorkerCertificateEntity } from './entities/worker-certificate.entity.js';

const CA_LOCK_KEY = 726_352_633;

@Injectable()
export class CaRepository {
  private readonly cas: Repository<CertificateAuthorityEntity>;
  private readonly certs: Repository<WorkerCertificateEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.cas = dataSource.getRepository(CertificateAuthorityEntity);
    this.certs = dataSource.getRepository(WorkerCertificateEntity);
  }

  get(name: string): Promise<CertificateAuthorityEntity | null> {
    return this.cas.findOneBy({ name });
  }

  /** Creates the CA once across replicas starting together; true when this call created it. */
  async ensure(
    name: string,
    make: () => Promise<{ certificate: string; privateKeyEnc: string; fingerprint: string }>,
  ): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [CA_LOCK_KEY]);
      if (await manager.findOneBy(CertificateAuthorityEntity, { name })) return false;
      await manager.insert(CertificateAuthorityEntity, { name, ...(await make()), createdAt: new Date() });
      return true;
    });
  }

  async recordCertificate(cert: WorkerCertificateEntity): Promise<void> {
    await this.certs.insert(cert);
  }

  /** Revokes every live certificate of the worker; returns their serials. */
  async revokeForWorker(workerId: string): Promise<string[]> {
    const live = await this.certs.findBy({ workerId, revokedAt: IsNull() });
    if (live.length === 0) return [];
    await this.certs.update({ workerId, revokedAt: IsNull() }, { revokedAt: new Date() });
    return live.map((c) => c.serial);
  }

  async hasRevoked(workerId: string): Promise<boolean> {
    return (await this.certs.count({ where: { workerId, revokedAt: Not(IsNull()) } })) > 0;
  }

  /** The newest live certificate of the worker. */
  latestForWorker(workerId: string): Promise<WorkerCertificateEntity | null> {
    return this.certs.findOne({ where: { workerId, revokedAt: IsNull() }, order: { createdAt: 'DESC' } });
  }

  /** Every valid certificate as `findValid` sees them (newest first, at most `limit`). */
  async allValid(limit: number): Promise<{ serial: string; workerId: string; notAfter: Date }[]> {
    const rows = await this.dataSource.query<{ serial: string; worker_id: string; not_after: Date }[]>(
      `SELECT c.serial, c.worker_id, c.not_after FROM worker_certificates c
         JOIN workers w ON w.id = c.worker_id AND w.status <> 'pending'
        WHERE c.revoked_at IS NULL AND c.not_after > now()
        ORDER BY c.created_at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ serial: r.serial, workerId: r.worker_id, notAfter: new Date(r.not_after) }));
  }

  /**
   * The certificate with this serial, if it was issued by us, is not revoked and its worker still
   * exists and is approved (a certificate issued while a deletion raced it stays useless).
   */
  findValid(serial: string): Promise<WorkerCertificateEntity | null> {
    return this.certs
      .createQueryBuilder('c')
      .innerJoin('workers', 'w', "w.id = c.worker_id AND w.status <> 'pending'")
      .where('c.serial = :serial AND c.revoked_at IS NULL', { serial })
      .getOne();
  }
}
