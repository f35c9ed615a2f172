import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { DriftItemEntity } from './entities/drift-item.entity.js';

@Injectable()
export class DriftRepository {
  private readonly repo: Repository<DriftItemEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(DriftItemEntity);
  }

  items(stackId: string): Promise<DriftItemEntity[]> {
    return this.repo.find({ where: { stackId }, order: { resource: 'ASC', kind: 'ASC', field: 'ASC' } });
  }

  /** One check's outcome in one transaction: new items in, gone items out, the rest seen again. */
  async apply(
    stackId: string,
    added: DriftItemEntity[],
    removed: DriftItemEntity[],
    kept: DriftItemEntity[],
  ): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      for (const item of removed) {
        await m.delete(DriftItemEntity, {
          stackId,
          resource: item.resource,
          kind: item.kind,
          field: item.field,
        });
      }
      // Another replica may have found the same item a moment ago: first seen stays theirs.
      if (added.length > 0)
        await m.createQueryBuilder().insert().into(DriftItemEntity).values(added).orIgnore().execute();
      for (const item of kept) {
        await m.update(
          DriftItemEntity,
          { stackId, resource: item.resource, kind: item.kind, field: item.field },
          { lastSeen: item.lastSeen, desired: item.desired, actual: item.actual, workerId: item.workerId },
        );
      }
    });
  }
}
