import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import type { Cursor } from '../common/pagination.js';
import { ClientEntity } from './entities/client.entity.js';

/** Bootstrap runs once across replicas starting together. */
const BOOTSTRAP_LOCK_KEY = 726_352_631;

@Injectable()
export class ClientsRepository {
  private readonly repo: Repository<ClientEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(ClientEntity);
  }

  /** Unscoped by design: authentication happens before anyone's owner is known. */
  findForAuthentication(clientId: string): Promise<ClientEntity | null> {
    return this.repo.findOneBy({ clientId });
  }

  findInOwner(owner: string, clientId: string): Promise<ClientEntity | null> {
    return this.repo.findOneBy({ owner, clientId });
  }

  /** Oldest first, continuing after `after`. */
  listInOwner(owner: string, limit: number, after?: Cursor): Promise<ClientEntity[]> {
    const qb = this.repo
      .createQueryBuilder('c')
      .where('c.owner = :owner', { owner })
      .orderBy('c.created_at', 'ASC')
      .addOrderBy('c.client_id', 'ASC')
      .limit(limit);
    if (after) qb.andWhere('(c.created_at, c.client_id) > (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  async insert(client: ClientEntity): Promise<void> {
    await this.repo.insert(client);
  }

  async setDisabled(owner: string, clientId: string, disabled: boolean): Promise<boolean> {
    const result = await this.repo.update({ owner, clientId }, { disabled });
    return (result.affected ?? 0) > 0;
  }

  async deleteInOwner(owner: string, clientId: string): Promise<boolean> {
    const result = await this.repo.delete({ owner, clientId });
    return (result.affected ?? 0) > 0;
  }

  async touch(clientId: string): Promise<void> {
    await this.repo.update({ clientId }, { lastUsedAt: new Date() });
  }

  /** Inserts `make()`'s client when the table is empty, under a lock; returns it, or null. */
  async insertIfNone(make: () => Promise<ClientEntity>): Promise<ClientEntity | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK_KEY]);
      if ((await manager.count(ClientEntity)) > 0) return null;
      const client = await make();
      await manager.insert(ClientEntity, client);
      return client;
    });
  }
}
