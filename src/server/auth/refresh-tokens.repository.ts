import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Repository } from 'typeorm';
import { RefreshTokenEntity } from './entities/refresh-token.entity.js';

@Injectable()
export class RefreshTokensRepository {
  private readonly repo: Repository<RefreshTokenEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(RefreshTokenEntity);
  }

  async insert(token: RefreshTokenEntity): Promise<void> {
    await this.repo.insert(token);
  }

  /** The token with this digest, whatever its state. */
  findByHash(tokenHash: string): Promise<RefreshTokenEntity | null> {
    return this.repo.findOneBy({ tokenHash });
  }

  /**
   * Redeems the token and stores its successor in one statement (one transaction), so a failure
   * between the two cannot end a chain. The redeem is a conditional UPDATE: of two concurrent
   * refreshes with one token exactly one wins; the other waits on the row lock, then finds nothing
   * to redeem and inserts nothing (false), which the caller treats as reuse.
   */
  async rotate(tokenHash: string, next: RefreshTokenEntity): Promise<boolean> {
    const rows = await this.dataSource.query<unknown[]>(
      `WITH redeemed AS (
         UPDATE refresh_tokens SET used_at = now()
          WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
          RETURNING 1)
       INSERT INTO refresh_tokens
         (id, token_hash, family_id, client_id, owner, scope, created_at, expires_at, used_at, revoked_at)
       SELECT $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL FROM redeemed
       RETURNING id`,
      [
        tokenHash,
        next.id,
        next.tokenHash,
        next.familyId,
        next.clientId,
        next.owner,
        next.scope,
        next.createdAt,
        next.expiresAt,
      ],
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
