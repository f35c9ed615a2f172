import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One runtime setting, shared by every replica. */
@Entity({ name: 'settings' })
export class SettingEntity {
  @PrimaryColumn({ type: 'text' })
  key: string;

  @Column({ type: 'jsonb' })
  value: unknown;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
