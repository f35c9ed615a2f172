import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Scope } from '../scopes.js';

@Entity({ name: 'oauth_clients' })
export class ClientEntity {
  @PrimaryColumn({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'text', array: true })
  scopes: Scope[];

  /** scrypt hash; the secret itself is shown once, at creation. */
  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @Column({ type: 'boolean' })
  disabled: boolean;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
