import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'join_tokens' })
export class JoinTokenEntity {
  /** The public half of the token (`sojt_<id>.<secret>`), shown in lists. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  /** SHA-256 of the secret half; the secret itself is shown once. */
  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ name: 'pre_approved', type: 'boolean' })
  preApproved: boolean;

  @Column({ type: 'jsonb' })
  labels: Record<string, string>;

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ type: 'integer' })
  uses: number;
}
