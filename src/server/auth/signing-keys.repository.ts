import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { SigningKeyEntity } from './entities/signing-key.entity.js';

const KEYS_LOCK_KEY = 726_352_632;

@Injectable()
export class SigningKeysRepository {
  private readonly repo: Repository<SigningKeyEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(SigningKeyEntity);
  }

  /** Keys that sign now or are still published (retired, until their tokens expired). */
  listPublishable(): Promise<SigningKeyEntity[]> {
    return this.repo
      .createQueryBuilder('k')
      .where('k.retired_at IS NULL OR k.publish_until > now()')
      .orderBy('k.created_at', 'DESC')
      .getMany();
  }

  /** Adds `make()`'s key when no key signs, under a lock (replicas starting together). */
  async ensureActive(make: () => Promise<SigningKeyEntity>): Promise<SigningKeyEntity | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK_KEY]);
      const signing = await manager.query<unknown[]>(
        'SELECT 1 FROM signing_keys WHERE retired_at IS NULL LIMIT 1',
      );
      if (signing.length > 0) return null;
      const key = await make();
      await manager.insert(SigningKeyEntity, key);
      return key;
    });
  }

  /** Retires every signing key (kept published for `publishForMs`) and adds `key`, atomically. */
  async rotate(key: SigningKeyEntity, publishForMs: number): Promise<string[]> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK_KEY]);
      // For UPDATE, TypeORM's query() answers [rows, rowCount].
      const [retired] = await manager.query<[{ kid: string }[], number]>(
        `UPDATE signing_keys SET retired_at = now(), publish_until = now() + ($1 || ' milliseconds')::interval
          WHERE retired_at IS NULL RETURNING kid`,
        [String(publishForMs)],
      );
      await manager.insert(SigningKeyEntity, key);
      return retired.map((r) => r.kid);
    });
  }
}
