import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Repository } from 'typeorm';
import type { Cursor } from '../common/pagination.js';
import { JoinTokenEntity } from './entities/join-token.entity.js';

@Injectable()
export class JoinTokensRepository {
  private readonly repo: Repository<JoinTokenEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(JoinTokenEntity);
  }

  async insert(token: JoinTokenEntity): Promise<void> {
    await this.repo.insert(token);
  }

  /** Unscoped by design: an enrolling agent has no owner yet; the token decides it. */
  findForEnrollment(id: string): Promise<JoinTokenEntity | null> {
    return this.repo.findOneBy({ id });
  }

  async countUse(id: string): Promise<void> {
    await this.repo.increment({ id }, 'uses', 1);
  }

  listInOwner(owner: string, limit: number, after?: Cursor): Promise<JoinTokenEntity[]> {
    const qb = this.repo
      .createQueryBuilder('t')
      .where('t.owner = :owner', { owner })
      .orderBy('t.created_at', 'ASC')
      .addOrderBy('t.id', 'ASC')
      .limit(limit);
    if (after) qb.andWhere('(t.created_at, t.id) > (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  async revokeInOwner(owner: string, id: string): Promise<boolean> {
    const result = await this.repo.update({ owner, id, revokedAt: IsNull() }, { revokedAt: new Date() });
    return (result.affected ?? 0) > 0;
  }

  findInOwner(owner: string, id: string): Promise<JoinTokenEntity | null> {
    return this.repo.findOneBy({ owner, id });
  }
}
