import { Injectable } from '@nestjs/common';
import { DataSource, In, Repository } from 'typeorm';
import { aliveReplicas } from '../agent-gateway/alive-replicas.js';
import { Batcher, AGENT_GATHERING } from '../common/batcher.js';
import { isUuid } from '../common/ids.js';
import type { Cursor } from '../common/pagination.js';
import { WorkerEntity } from './entities/worker.entity.js';
import type { NodeMetrics, WorkerState } from './worker-state.js';

export interface HeartbeatRow {
  id: string;
  status: WorkerState;
  metrics: NodeMetrics;
  lastHeartbeat: Date;
}

@Injectable()
export class WorkersRepository {
  private readonly repo: Repository<WorkerEntity>;

  /**
   * The hellos' reads of their worker, gathered: a fleet reconnecting at once reads its rows a few
   * hundred per query instead of one query each (docs/workers.md, "Hellos in turn").
   */
  private readonly helloReads: Batcher<string, WorkerEntity | null>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(WorkerEntity);
    this.helloReads = new Batcher(async (ids) => {
      const wanted = [...new Set(ids.filter(isUuid))];
      const rows = wanted.length > 0 ? await this.repo.findBy({ id: In(wanted) }) : [];
      const byId = new Map(rows.map((row) => [row.id, row]));
      return ids.map((id) => byId.get(id) ?? null);
    }, AGENT_GATHERING);
  }

  /** As `findById`, gathered with the other hellos' reads made meanwhile. */
  findForHello(id: string): Promise<WorkerEntity | null> {
    return this.helloReads.call(id);
  }

  async insert(worker: WorkerEntity): Promise<void> {
    await this.repo.insert(worker);
  }

  findInOwner(owner: string, id: string): Promise<WorkerEntity | null> {
    return this.repo.findOneBy({ owner, id });
  }

  /** Unscoped by design: the gateway knows a worker only by the id in its certificate. */
  findById(id: string): Promise<WorkerEntity | null> {
    return this.repo.findOneBy({ id });
  }

  listInOwner(owner: string, limit: number, status?: WorkerState, after?: Cursor): Promise<WorkerEntity[]> {
    const qb = this.repo
      .createQueryBuilder('w')
      .where('w.owner = :owner', { owner })
      .orderBy('w.created_at', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .limit(limit);
    if (status) qb.andWhere('w.status = :status', { status });
    if (after) qb.andWhere('(w.created_at, w.id) > (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  /** Every owner's workers in creation order, a page at a time (the debug bundle). */
  listEveryOwner(limit: number, after?: Cursor): Promise<WorkerEntity[]> {
    const qb = this.repo
      .createQueryBuilder('w')
      .orderBy('w.created_at', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .limit(limit);
    if (after) qb.where('(w.created_at, w.id) > (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  /** Approves a pending worker; false when it was not pending (already approved, or gone). */
  async approve(owner: string, id: string, status: WorkerState, at: Date): Promise<boolean> {
    const result = await this.repo.update({ owner, id, status: 'pending' }, { status, approvedAt: at });
    return (result.affected ?? 0) > 0;
  }

  /** Workers per status, every owner: for the health check and the healthy gauge. */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.dataSource.query<{ status: string; n: string }[]>(
      'SELECT status, count(*) AS n FROM workers GROUP BY status',
    );
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }

  /** One statement for a batch of heartbeats: the flush of the in-memory state. */
  async flushHeartbeats(rows: HeartbeatRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.dataSource.query(
      `UPDATE workers AS w
          SET status = u.status, metrics = u.metrics, last_heartbeat = u.last_heartbeat
         FROM (SELECT unnest($1::uuid[]) AS id, unnest($2::text[]) AS status,
                      unnest($3::jsonb[]) AS metrics, unnest($4::timestamptz[]) AS last_heartbeat) AS u
        WHERE w.id = u.id AND w.status <> 'pending'`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.status),
        rows.map((r) => JSON.stringify(r.metrics)),
        rows.map((r) => r.lastHeartbeat.toISOString()),
      ],
    );
  }

  /**
   * The unreachable sweep, one statement: approved workers whose last heartbeat (or approval, if
   * they never sent one) is older than `silenceMs` become unreachable. Returns them with their
   * previous status and how long they had been silent (for the transition's log line).
   */
  async markUnreachable(
    silenceMs: number,
    sessionTtlMs: number,
  ): Promise<{ id: string; previous: WorkerState; silent_ms: number }[]> {
    const [rows] = await this.dataSource.query<
      [{ id: string; previous: WorkerState; silent_ms: number }[], number]
    >(
      `WITH ${aliveReplicas('$2')}
       UPDATE workers AS w SET status = 'unreachable'
         FROM (SELECT id, status AS previous, coalesce(last_heartbeat, approved_at) AS heard FROM workers
                WHERE status IN ('healthy', 'degraded', 'unhealthy')
                  AND coalesce(last_heartbeat, approved_at) < now() - ($1 || ' milliseconds')::interval
                  -- A live replica holding the worker's stream judges its silence itself.
                  AND NOT EXISTS (SELECT 1 FROM agent_sessions s JOIN alive USING (replica)
                                   WHERE s.worker_id = workers.id)
                FOR UPDATE) AS old
        WHERE w.id = old.id
        RETURNING w.id, old.previous,
          (extract(epoch FROM clock_timestamp() - old.heard) * 1000)::int AS silent_ms`,
      [String(silenceMs), sessionTtlMs],
    );
    return rows;
  }
}
