import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'audit_events' })
export class AuditEventEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'timestamptz' })
  at: Date;

  @Column({ type: 'text' })
  action: string;

  @Column({ type: 'text' })
  outcome: string;

  @Column({ type: 'text', nullable: true })
  owner: string | null;

  @Column({ type: 'text', nullable: true })
  actor: string | null;

  @Column({ type: 'text', nullable: true })
  target: string | null;

  @Column({ type: 'text', nullable: true })
  ip: string | null;

  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  @Column({ type: 'jsonb' })
  details: Record<string, unknown>;
}
