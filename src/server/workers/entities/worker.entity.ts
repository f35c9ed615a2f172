import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { NodeMetrics, WorkerState } from '../worker-state.js';

@Entity({ name: 'workers' })
export class WorkerEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  hostname: string;

  @Column({ type: 'text' })
  address: string;

  @Column({ type: 'text' })
  os: string;

  @Column({ type: 'text' })
  arch: string;

  @Column({ type: 'text' })
  version: string;

  @Column({ type: 'text' })
  driver: string;

  @Column({ type: 'jsonb' })
  labels: Record<string, string>;

  @Column({ type: 'text' })
  status: WorkerState;

  @Column({ name: 'join_token_id', type: 'text', nullable: true })
  joinTokenId: string | null;

  /** Kept so approval can issue the certificate the agent asked for. */
  @Column({ type: 'text' })
  csr: string;

  /** SHA-256 of the secret the pending agent polls with. */
  @Column({ name: 'enrollment_secret_hash', type: 'text' })
  enrollmentSecretHash: string;

  @Column({ type: 'jsonb', nullable: true })
  metrics: NodeMetrics | null;

  @Column({ name: 'last_heartbeat', type: 'timestamptz', nullable: true })
  lastHeartbeat: Date | null;

  @Column({ name: 'approved_at', type: 'timestamptz', nullable: true })
  approvedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
