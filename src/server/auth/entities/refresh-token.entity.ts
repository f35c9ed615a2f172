import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'refresh_tokens' })
export class RefreshTokenEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** SHA-256 of the opaque token; the token itself is never stored. */
  @Column({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  /** Every token obtained by refreshing descends from one grant; reuse revokes the family. */
  @Column({ name: 'family_id', type: 'uuid' })
  familyId: string;

  @Column({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'text' })
  scope: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
