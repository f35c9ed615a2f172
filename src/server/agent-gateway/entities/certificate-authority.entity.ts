import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'certificate_authorities' })
export class CertificateAuthorityEntity {
  @PrimaryColumn({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  certificate: string;

  /** PKCS#8 PEM sealed by SecretBox with `ca:<name>` as context. */
  @Column({ name: 'private_key_enc', type: 'text' })
  privateKeyEnc: string;

  @Column({ type: 'text' })
  fingerprint: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
