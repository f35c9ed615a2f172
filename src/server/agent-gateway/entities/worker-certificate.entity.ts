import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Every certificate issued to a worker; kept after the worker is deleted, to stay revoked. */
@Entity({ name: 'worker_certificates' })
export class WorkerCertificateEntity {
  @PrimaryColumn({ type: 'text' })
  serial: string;

  @Column({ name: 'worker_id', type: 'uuid' })
  workerId: string;

  @Column({ name: 'not_before', type: 'timestamptz' })
  notBefore: Date;

  @Column({ name: 'not_after', type: 'timestamptz' })
  notAfter: Date;

  @Column({ type: 'text' })
  certificate: string;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
