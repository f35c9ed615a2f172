import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { DriftKind } from '../../../contracts/api/drift.js';

@Entity({ name: 'drift_items' })
export class DriftItemEntity {
  @PrimaryColumn({ name: 'stack_id', type: 'uuid' })
  stackId: string;

  @PrimaryColumn({ type: 'text' })
  resource: string;

  @PrimaryColumn({ type: 'text' })
  kind: DriftKind;

  /** '' unless `modified`. */
  @PrimaryColumn({ type: 'text' })
  field: string;

  @Column({ name: 'worker_id', type: 'uuid', nullable: true })
  workerId: string | null;

  @Column({ type: 'text', nullable: true })
  desired: string | null;

  @Column({ type: 'text', nullable: true })
  actual: string | null;

  @Column({ name: 'detected_at', type: 'timestamptz' })
  detectedAt: Date;

  @Column({ name: 'last_seen', type: 'timestamptz' })
  lastSeen: Date;
}
