import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'signing_keys' })
export class SigningKeyEntity {
  @PrimaryColumn({ type: 'text' })
  kid: string;

  @Column({ type: 'text' })
  alg: string;

  @Column({ name: 'public_jwk', type: 'jsonb' })
  publicJwk: Record<string, string>;

  /** PKCS#8 PEM sealed by SecretBox with the kid as context. */
  @Column({ name: 'private_key_enc', type: 'text' })
  privateKeyEnc: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set when a newer key took over signing. */
  @Column({ name: 'retired_at', type: 'timestamptz', nullable: true })
  retiredAt: Date | null;

  /** A retired key stays in the key set until every token it signed has expired. */
  @Column({ name: 'publish_until', type: 'timestamptz', nullable: true })
  publishUntil: Date | null;
}
