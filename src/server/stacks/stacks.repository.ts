import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager, Repository } from 'typeorm';
import type { Cursor } from '../common/pagination.js';
import { dateOrNull, dateValue, jsonValue } from '../database/row-values.js';
import { StackRevisionEntity } from './entities/stack-revision.entity.js';
import type { StackStatus } from '../../contracts/api/stacks.js';
import { StackEntity } from './entities/stack.entity.js';
import type { FinishedStack } from './stack-publishing.js';
import type { StackDefinition } from './definition/definition.types.js';
import { prepared } from '../database/prepared-statements.js';

/** Postgres unique violation on (owner, name). */
export const isNameConflict = (err: unknown): boolean => (err as { code?: string }).code === '23505';

const STACK_COLUMNS = `s.id, s.owner, s.name, s.status, s.revision, s.deployed_revision, s.worker_id, s.reserved_cpu,
       s.reserved_memory, s.last_job_id, s.drift_ignores, s.drift_status, s.drift_checked_at, s.created_at,
       s.updated_at`;
const SELECT_STACK = `SELECT ${STACK_COLUMNS} FROM stacks s`;
// The reads of every stack request, deploy and job end: prepared once per connection.
const STACK_IN_OWNER = prepared(`${SELECT_STACK} WHERE s.id = $1 AND s.owner = $2`);
const STACK_BY_ID = prepared(`${SELECT_STACK} WHERE s.id = $1`);
const STACK_WITH_DEFINITION = prepared(`SELECT ${STACK_COLUMNS}, r.definition
         FROM stacks s LEFT JOIN stack_revisions r ON r.stack_id = s.id AND r.revision = s.revision
        WHERE s.id = $1 AND s.owner = $2`);
const STATUS_WHILE_ACTIVE = prepared(`UPDATE stacks SET status = $2, updated_at = now()
        WHERE id = $1 AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = $3
                                   AND jobs.status IN ('queued', 'dispatched', 'running', 'cancelling'))`);
const FINISH_STACKS = prepared(`WITH u AS (
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::int[]) AS u (stack_id, job_id, succeeded, revision)
       ), old AS (
         SELECT s.id, s.owner, s.name, s.deployed_revision FROM stacks s JOIN u ON u.stack_id = s.id FOR UPDATE OF s
       )
       UPDATE stacks AS s
          SET status = CASE WHEN u.succeeded THEN 'deployed' ELSE 'failed' END,
              deployed_revision = CASE WHEN u.succeeded THEN u.revision ELSE s.deployed_revision END,
              last_job_id = CASE WHEN $5::boolean THEN u.job_id ELSE s.last_job_id END,
              updated_at = now()
         FROM u JOIN old ON old.id = u.stack_id
        WHERE s.id = u.stack_id
        RETURNING old.id, old.owner, old.name, old.deployed_revision`);
const PLACE_STACKS = prepared(`UPDATE stacks AS s
          SET worker_id = u.worker_id, reserved_cpu = u.cpu, reserved_memory = u.memory, updated_at = now()
         FROM (SELECT unnest($1::uuid[]) AS id, unnest($2::uuid[]) AS worker_id,
                      unnest($3::float8[]) AS cpu, unnest($4::bigint[]) AS memory) AS u
        WHERE s.id = u.id`);

interface StackRow {
  id: string;
  owner: string;
  name: string;
  status: StackEntity['status'];
  revision: number;
  deployed_revision: number | null;
  worker_id: string | null;
  reserved_cpu: number | string;
  reserved_memory: number | string | null;
  last_job_id: string | null;
  drift_ignores: string[] | string;
  drift_status: StackEntity['driftStatus'];
  drift_checked_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/** A row of SELECT_STACK as the entity TypeORM would give (bigint and numeric as numbers). */
function stackOf(r: StackRow): StackEntity {
  return Object.assign(new StackEntity(), {
    id: r.id,
    owner: r.owner,
    name: r.name,
    status: r.status,
    revision: Number(r.revision),
    deployedRevision: r.deployed_revision === null ? null : Number(r.deployed_revision),
    workerId: r.worker_id,
    reservedCpu: Number(r.reserved_cpu),
    reservedMemory: Number(r.reserved_memory ?? 0),
    lastJobId: r.last_job_id,
    driftIgnores: jsonValue(r.drift_ignores),
    driftStatus: r.drift_status,
    driftCheckedAt: dateOrNull(r.drift_checked_at),
    createdAt: dateValue(r.created_at),
    updatedAt: dateValue(r.updated_at),
  });
}

@Injectable()
export class StacksRepository {
  private readonly stacks: Repository<StackEntity>;
  private readonly revisions: Repository<StackRevisionEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.stacks = dataSource.getRepository(StackEntity);
    this.revisions = dataSource.getRepository(StackRevisionEntity);
  }

  /** The stack and its first revision, together. */
  async create(stack: StackEntity, revision: StackRevisionEntity): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.insert(StackEntity, stack);
      await m.insert(StackRevisionEntity, revision);
    });
  }

  /** A new revision becomes current, unless another replace won the race (false). */
  async addRevision(stack: StackEntity, revision: StackRevisionEntity): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const result = await m.update(
        StackEntity,
        { id: stack.id, owner: stack.owner, revision: revision.revision - 1 },
        { revision: revision.revision, updatedAt: revision.createdAt },
      );
      if ((result.affected ?? 0) === 0) return false;
      await m.insert(StackRevisionEntity, revision);
      return true;
    });
  }

  // The two reads of every stack request and job end: plain statements (no query building).
  async findInOwner(owner: string, id: string): Promise<StackEntity | null> {
    const rows = await this.dataSource.query<StackRow[]>(STACK_IN_OWNER, [id, owner]);
    return rows.length ? stackOf(rows[0]) : null;
  }

  /** The owner's stack with the definition of its current revision, in one statement (a deploy). */
  async findInOwnerWithDefinition(
    owner: string,
    id: string,
  ): Promise<{ stack: StackEntity; definition: StackDefinition | null } | null> {
    const rows = await this.dataSource.query<(StackRow & { definition: StackDefinition | string | null })[]>(
      STACK_WITH_DEFINITION,
      [id, owner],
    );
    if (!rows.length) return null;
    const { definition } = rows[0];
    return {
      stack: stackOf(rows[0]),
      definition: definition === null ? null : jsonValue(definition),
    };
  }

  async findById(id: string): Promise<StackEntity | null> {
    const rows = await this.dataSource.query<StackRow[]>(STACK_BY_ID, [id]);
    return rows.length ? stackOf(rows[0]) : null;
  }

  listInOwner(owner: string, limit: number, after?: Cursor): Promise<StackEntity[]> {
    const qb = this.stacks
      .createQueryBuilder('s')
      .where('s.owner = :owner', { owner })
      .orderBy('s.created_at', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .limit(limit);
    if (after) qb.andWhere('(s.created_at, s.id) > (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  revision(stackId: string, revision: number): Promise<StackRevisionEntity | null> {
    return this.revisions.findOneBy({ stackId, revision });
  }

  /** Several stacks' revisions, one statement; those that do not exist are left out. */
  revisionsOf(keys: { stackId: string; revision: number }[]): Promise<StackRevisionEntity[]> {
    if (keys.length === 0) return Promise.resolve([]);
    return this.revisions
      .createQueryBuilder('r')
      .select(['r.stackId', 'r.revision', 'r.definition'])
      .where('(r.stackId, r.revision) IN (SELECT * FROM unnest(:ids::uuid[], :revisions::int[]))', {
        ids: keys.map((k) => k.stackId),
        revisions: keys.map((k) => k.revision),
      })
      .getMany();
  }

  listRevisions(
    stackId: string,
  ): Promise<Pick<StackRevisionEntity, 'revision' | 'createdAt' | 'createdBy'>[]> {
    return this.revisions.find({
      select: { revision: true, createdAt: true, createdBy: true },
      where: { stackId },
      order: { revision: 'DESC' },
      take: 1000,
    });
  }

  async update(
    id: string,
    changes: Partial<
      Pick<
        StackEntity,
        | 'status'
        | 'workerId'
        | 'reservedCpu'
        | 'reservedMemory'
        | 'deployedRevision'
        | 'lastJobId'
        | 'driftIgnores'
        | 'driftStatus'
        | 'driftCheckedAt'
      >
    >,
  ): Promise<void> {
    await this.stacks.update({ id }, { ...changes, updatedAt: new Date() });
  }

  async setStatus(id: string, status: StackStatus): Promise<void> {
    await this.update(id, { status });
  }

  /** Where stacks now run and what they reserve there, one statement for a dispatch round. */
  async place(rows: { stackId: string; workerId: string; cpu: number; memory: number }[]): Promise<void> {
    if (rows.length === 0) return;
    await this.dataSource.query(PLACE_STACKS, [
      rows.map((r) => r.stackId),
      rows.map((r) => r.workerId),
      rows.map((r) => r.cpu),
      rows.map((r) => r.memory),
    ]);
  }

  /**
   * The end of jobs of different stacks (provisions, and destroys that did not succeed), one
   * statement: each stack's status (`deployed` with the job's revision, or `failed`) and, with
   * `reachedNode`, its last job. Returns the stacks found, as
   * they were before (locked first, so the previous revision is the one this write replaced).
   */
  async finishStacks(
    rows: { stackId: string; jobId: string; succeeded: boolean; revision: number }[],
    reachedNode: boolean,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Map<string, FinishedStack>> {
    if (rows.length === 0) return new Map();
    const [updated] = await manager.query<
      [{ id: string; owner: string; name: string; deployed_revision: number | null }[], number]
    >(FINISH_STACKS, [
      rows.map((r) => r.stackId),
      rows.map((r) => r.jobId),
      rows.map((r) => r.succeeded),
      rows.map((r) => r.revision),
      reachedNode,
    ]);
    return new Map(
      updated.map((r) => [
        r.id,
        { id: r.id, owner: r.owner, name: r.name, deployedRevision: r.deployed_revision },
      ]),
    );
  }

  /** Sets the status a job gives its stack, unless the job already finished (its hook won). */
  async setStatusWhileActive(id: string, status: StackStatus, jobId: string): Promise<void> {
    await this.dataSource.query(STATUS_WHILE_ACTIVE, [id, status, jobId]);
  }

  /** Deletes stacks (their revisions, drift, logs and links go with them); answers those deleted. */
  async deleteMany(
    ids: string[],
    manager: EntityManager = this.dataSource.manager,
  ): Promise<{ id: string; owner: string }[]> {
    if (ids.length === 0) return [];
    const [deleted] = await manager.query<[{ id: string; owner: string }[], number]>(
      'DELETE FROM stacks WHERE id = ANY($1::uuid[]) RETURNING id, owner',
      [ids],
    );
    return deleted;
  }

  /** CPU and memory reserved by the stacks on each worker. */
  async reservations(
    workerIds: string[],
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Map<string, { cpu: number; memory_bytes: number }>> {
    if (workerIds.length === 0) return new Map();
    const rows = await manager.query<{ worker_id: string; cpu: number; memory: string }[]>(
      `SELECT worker_id, sum(reserved_cpu) AS cpu, sum(reserved_memory) AS memory
         FROM stacks WHERE worker_id = ANY($1::uuid[]) GROUP BY worker_id`,
      [workerIds],
    );
    return new Map(rows.map((r) => [r.worker_id, { cpu: Number(r.cpu), memory_bytes: Number(r.memory) }]));
  }

  placedOn(workerId: string): Promise<StackEntity[]> {
    return this.stacks.find({ where: { workerId }, take: 10_000 });
  }

  allPlaced(): Promise<StackEntity[]> {
    return this.stacks
      .createQueryBuilder('s')
      .where('s.worker_id IS NOT NULL')
      .orderBy('s.id')
      .limit(100_000)
      .getMany();
  }

  async count(): Promise<number> {
    return this.stacks.count();
  }
}
