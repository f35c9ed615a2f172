import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { StackDefinition } from '../definition/definition.types.js';

@Entity({ name: 'stack_revisions' })
export class StackRevisionEntity {
  @PrimaryColumn({ name: 'stack_id', type: 'uuid' })
  stackId: string;

  @PrimaryColumn({ type: 'integer' })
  revision: number;

  /** The YAML as the operator sent it. */
  @Column({ type: 'text' })
  source: string;

  @Column({ type: 'jsonb' })
  definition: StackDefinition;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'created_by', type: 'text' })
  createdBy: string;
}
