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
    // For UPDATE, TypeORM's query() answers [rows, rowCount].
    const [rows] = await this.repo.query<[unknown[], number]>(
      `UPDATE refresh_tokens SET used_at = now()
        WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
        RETURNING id`,
      [tokenHash],
    );
    const token = await this.repo.findOneBy({ tokenHash });
    if (!token) return { outcome: 'invalid' };
    if (rows.length === 1) return { outcome: 'redeemed', token };
    if (token.usedAt !== null && token.revokedAt === null) return { outcome: 'reused', token };
    return { outcome: 'invalid' };
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
