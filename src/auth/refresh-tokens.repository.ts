import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Repository } from 'typeorm';
import { RefreshTokenEntity } from './entities/refresh-token.entity.js';

export type RedeemResult =
  | { outcome: 'redeemed'; token: RefreshTokenEntity }
  | { outcome: 'reused'; token: RefreshTokenEntity }
  | { outcome: 'invalid' };

@Injectable()
export class RefreshTokensRepository {
  private readonly repo: Repository<RefreshTokenEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(RefreshTokenEntity);
  }

  async insert(token: RefreshTokenEntity): Promise<void> {
    await this.repo.insert(token);
  }

  /**
   * Marks the token used in one atomic statement, so two concurrent refreshes with the same token
   * cannot both succeed. A token already used is reported as reuse; expired, revoked or unknown
   * tokens as invalid.
   */
  async redeem(tokenHash: string): Promise<RedeemResult> {
    const redeemed = await this.repo
      .createQueryBuilder()
      .update()
      .set({ usedAt: () => 'now()' })
      .where('token_hash = :tokenHash AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()', {
        tokenHash,
      })
      .returning('*')
      .execute();
    const row = (redeemed.raw as RefreshTokenRow[])[0];
    if (row) return { outcome: 'redeemed', token: fromRow(row) };
    // Not redeemable: tell a replay of a used token from anything else.
    const token = await this.repo.findOneBy({ tokenHash });
    if (token && token.usedAt !== null && token.revokedAt === null) return { outcome: 'reused', token };
    return { outcome: 'invalid' };
  }

  /** Whether any token of the family was revoked (reuse was detected). */
  async familyRevoked(familyId: string): Promise<boolean> {
    const rows = await this.repo.query<unknown[]>(
      'SELECT 1 FROM refresh_tokens WHERE family_id = $1 AND revoked_at IS NOT NULL LIMIT 1',
      [familyId],
    );
    return rows.length > 0;
  }

  /** Revokes every live token of the family; returns how many. */
  async revokeFamily(familyId: string): Promise<number> {
    const result = await this.repo.update({ familyId, revokedAt: IsNull() }, { revokedAt: new Date() });
    return result.affected ?? 0;
  }

  /** Deletes tokens past their expiry; returns how many. */
  async deleteExpired(): Promise<number> {
    const result = await this.repo.createQueryBuilder().delete().where('expires_at < now()').execute();
    return result.affected ?? 0;
  }
}

interface RefreshTokenRow {
  id: string;
  token_hash: string;
  family_id: string;
  client_id: string;
  owner: string;
  scope: string;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

function fromRow(row: RefreshTokenRow): RefreshTokenEntity {
  return Object.assign(new RefreshTokenEntity(), {
    id: row.id,
    tokenHash: row.token_hash,
    familyId: row.family_id,
    clientId: row.client_id,
    owner: row.owner,
    scope: row.scope,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    usedAt: row.used_at,
    revokedAt: row.revoked_at,
  });
}
