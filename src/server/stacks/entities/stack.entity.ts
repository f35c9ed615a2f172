import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { DriftStatus } from '../../../contracts/api/drift.js';
import type { StackStatus } from '../../../contracts/api/stacks.js';

@Entity({ name: 'stacks' })
export class StackEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  status: StackStatus;

  /** The current (latest) revision. */
  @Column({ type: 'integer' })
  revision: number;

  /** The revision the last successful provision applied. */
  @Column({ name: 'deployed_revision', type: 'integer', nullable: true })
  deployedRevision: number | null;

  @Column({ name: 'worker_id', type: 'uuid', nullable: true })
  workerId: string | null;

  @Column({ name: 'reserved_cpu', type: 'double precision' })
  reservedCpu: number;

  @Column({
    name: 'reserved_memory',
    type: 'bigint',
    transformer: { to: (v: number) => v, from: (v: string | null) => Number(v ?? 0) },
  })
  reservedMemory: number;

  /** The last job that reached the node (the agent reports it with its state). */
  @Column({ name: 'last_job_id', type: 'uuid', nullable: true })
  lastJobId: string | null;

  /** Resource names whose drift the operator accepts. */
  @Column({ name: 'drift_ignores', type: 'jsonb' })
  driftIgnores: string[];

  @Column({ name: 'drift_status', type: 'text' })
  driftStatus: DriftStatus;

  @Column({ name: 'drift_checked_at', type: 'timestamptz', nullable: true })
  driftCheckedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
