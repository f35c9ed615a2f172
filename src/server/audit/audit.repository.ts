import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import type { Cursor } from '../common/pagination.js';
import { AuditEventEntity } from './entities/audit-event.entity.js';

export interface AuditQuery {
  /** Only this owner's events; undefined for every owner (the operator's view). */
  owner: string | undefined;
  action?: string;
  after?: Cursor;
  limit: number;
}

@Injectable()
export class AuditRepository {
  private readonly repo: Repository<AuditEventEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(AuditEventEntity);
  }

  async insert(event: AuditEventEntity): Promise<void> {
    // details is free-form JSON, which TypeORM's deep-partial type cannot express.
    await this.repo.insert(event as QueryDeepPartialEntity<AuditEventEntity>);
  }

  /** Newest first; `after` continues below the given (at, id). */
  list(query: AuditQuery): Promise<AuditEventEntity[]> {
    const qb = this.repo
      .createQueryBuilder('e')
      .orderBy('e.at', 'DESC')
      .addOrderBy('e.id', 'DESC')
      .limit(query.limit);
    if (query.owner !== undefined) qb.andWhere('e.owner = :owner', { owner: query.owner });
    if (query.action !== undefined) qb.andWhere('e.action = :action', { action: query.action });
    if (query.after) qb.andWhere('(e.at, e.id) < (:at, :id)', { at: query.after.at, id: query.after.id });
    return qb.getMany();
  }
}
