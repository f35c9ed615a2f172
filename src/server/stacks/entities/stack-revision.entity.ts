import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { RevisionReading } from '../../../contracts/api/stacks.js';
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

  /** How the file was read (format, and the request's Compose name, kit, variant, profiles); null: ours, as it is. */
  @Column({ type: 'jsonb', nullable: true })
  reading: RevisionReading | null;

  /** The Compose variables it was sent with, as JSON sealed by the SecretBox; null: none. */
  @Column({ name: 'variables_sealed', type: 'text', nullable: true })
  variablesSealed: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'created_by', type: 'text' })
  createdBy: string;
}
