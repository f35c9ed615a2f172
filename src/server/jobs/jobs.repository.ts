import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager, Repository } from 'typeorm';
import { Batcher, AGENT_GATHERING } from '../common/batcher.js';
import type { Cursor } from '../common/pagination.js';
import { LiteralMemo, textArray, uuidArray } from '../database/array-literals.js';
import { dateOrNull, dateValue, jsonValue } from '../database/row-values.js';
import type { AuditEventEntity } from '../audit/entities/audit-event.entity.js';
import type { StackStatus } from '../../contracts/api/stacks.js';
import { JobEntity } from './entities/job.entity.js';
import { prepared } from '../database/prepared-statements.js';
import { JOB_STATES, nextJobState, type JobEvent, type JobState, type JobType } from './job-state.js';

export interface JobFilter {
  status?: JobState;
  type?: JobType;
  stackId?: string;
  workerId?: string;
}

export type JobPatch = Partial<
  Pick<JobEntity, 'error' | 'results' | 'progress' | 'finishedAt' | 'startedAt'>
>;

export interface JobLogLine {
  id: number;
  time: Date;
  line: string;
}

/** The last lines of a job's output, and how many it has in all. */
export interface JobLogTail {
  lines: JobLogLine[];
  total: number;
}

/** The states an event may be applied in, read off the one transition table. */
export const statesAccepting = (event: JobEvent): JobState[] =>
  JOB_STATES.filter((state) => nextJobState(state, event) !== null);

/** Postgres unique violation on the one-active-job-per-stack index. */
export const isActiveJobConflict = (err: unknown): boolean =>
  (err as { code?: string }).code === '23505' &&
  String((err as { constraint?: string }).constraint ?? (err as Error).message).includes(
    'jobs_one_active_per_stack',
  );

const JOB_COLUMNS = `id, owner, type, stack_id, stack_name, revision, worker_id, status, progress, attempts,
       max_attempts, error, payload, results, timeout_ms, created_at, dispatched_at, started_at, finished_at,
       updated_at, created_by`;
const SELECT_JOB = `SELECT ${JOB_COLUMNS} FROM jobs`;
const JOB_BY_ID = prepared(`${SELECT_JOB} WHERE id = $1`);
const JOBS_BY_IDS = prepared(`${SELECT_JOB} WHERE id = ANY($1::uuid[])`);
// The sweep's one read ($1 the sweeper's clock, as the timestamps are the service's): unfinished jobs
// placed on a worker deleted since, dispatches unconfirmed for $2 ms and jobs out of the queue past
// their timeout (a job queued again keeps its last dispatch time: it waits, however old that is).
const JOBS_FOR_SWEEP = prepared(`SELECT * FROM (
  SELECT ${JOB_COLUMNS}, NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = j.worker_id) AS worker_removed FROM jobs j
   WHERE status IN ('queued', 'dispatched', 'running', 'cancelling') AND worker_id IS NOT NULL) j
 WHERE worker_removed
    OR (status = 'dispatched' AND dispatched_at < $1::timestamptz - $2 * interval '1 millisecond')
    OR (status <> 'queued'
        AND COALESCE(started_at, dispatched_at) < $1::timestamptz - timeout_ms * interval '1 millisecond')
 ORDER BY updated_at
 LIMIT $3`);

// claimPlaced's statement ($1, $2 the live workers and their owners, $3 the batch, $4 the
// dispatch time, $5 every connected worker). The row of `others` always comes back, with the
// claimed jobs' columns or, when none was claimed, NULLs.
const CLAIM_PLACED = prepared(`WITH live AS (SELECT * FROM unnest($1::uuid[], $2::text[]) AS l (id, owner)),
  next AS (
    SELECT q.id FROM jobs q JOIN live ON q.worker_id = live.id AND q.owner = live.owner
     WHERE q.status = 'queued' ORDER BY q.created_at LIMIT $3 FOR UPDATE OF q SKIP LOCKED),
  moved AS (
    UPDATE jobs AS j SET status = 'dispatched', attempts = j.attempts + 1, dispatched_at = $4,
           error = NULL, updated_at = $4
      FROM next WHERE j.id = next.id AND j.status = 'queued'
    RETURNING ${JOB_COLUMNS.split(',')
      .map((c) => `j.${c.trim()}`)
      .join(', ')})
SELECT m.*, o.others FROM (
  SELECT EXISTS (
    SELECT 1 FROM jobs q
     WHERE q.status = 'queued' AND (q.worker_id IS NULL OR q.worker_id = ANY($5::uuid[]))
       AND NOT EXISTS (SELECT 1 FROM live WHERE live.id = q.worker_id AND live.owner = q.owner)) AS others) o
  LEFT JOIN moved m ON true`);

interface JobRow {
  id: string;
  owner: string;
  type: JobType;
  stack_id: string;
  stack_name: string;
  revision: number;
  worker_id: string | null;
  status: JobState;
  progress: number;
  attempts: number;
  max_attempts: number;
  error: string | null;
  payload: JobEntity['payload'] | string;
  results: JobEntity['results'] | string;
  timeout_ms: number;
  created_at: Date | string;
  dispatched_at: Date | string | null;
  started_at: Date | string | null;
  finished_at: Date | string | null;
  updated_at: Date | string;
  created_by: string;
}

/** A row of SELECT_JOB as the entity TypeORM would give. */
function jobOf(r: JobRow): JobEntity {
  return Object.assign(new JobEntity(), {
    id: r.id,
    owner: r.owner,
    type: r.type,
    stackId: r.stack_id,
    stackName: r.stack_name,
    revision: r.revision,
    workerId: r.worker_id,
    status: r.status,
    progress: r.progress,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    error: r.error,
    payload: jsonValue(r.payload),
    results: r.results === null ? null : jsonValue(r.results),
    timeoutMs: r.timeout_ms,
    createdAt: dateValue(r.created_at),
    dispatchedAt: dateOrNull(r.dispatched_at),
    startedAt: dateOrNull(r.started_at),
    finishedAt: dateOrNull(r.finished_at),
    updatedAt: dateValue(r.updated_at),
    createdBy: r.created_by,
  });
}

@Injectable()
export class JobsRepository {
  private readonly repo: Repository<JobEntity>;

  /**
   * The jobs of agents that connected or disconnected: unfinished ones on their workers, and
   * queued ones for them; read for many agents in one query when they come or go together (a fleet
   * after a restart).
   */
  private readonly agentJobReads: Batcher<string, JobEntity[]>;

  /** claimPlaced's array parameters, rebuilt only when the live workers change. */
  private readonly claimLiterals = {
    liveIds: new LiteralMemo(uuidArray),
    liveOwners: new LiteralMemo(textArray),
    connected: new LiteralMemo(uuidArray),
  };

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(JobEntity);
    this.agentJobReads = new Batcher(async (workerIds) => {
      const jobs = await this.repo
        .createQueryBuilder('j')
        .where('j.worker_id IN (:...workerIds)', { workerIds: [...new Set(workerIds)] })
        .andWhere("j.status IN ('queued', 'dispatched', 'running', 'cancelling')")
        .getMany();
      const byWorker = new Map<string | null, JobEntity[]>();
      for (const job of jobs) {
        const of = byWorker.get(job.workerId);
        if (of) of.push(job);
        else byWorker.set(job.workerId, [job]);
      }
      return workerIds.map((id) => byWorker.get(id) ?? []);
    }, AGENT_GATHERING);
  }

  /**
   * Inserts a job and, in the same statement, what its request changes with it: the stack's status
   * (`stackStatus`, on the job's stack of the job's owner) and the request's audit row. One
   * statement, one round trip: either all of it is stored or none (a second unfinished job of the
   * stack fails the whole statement on the one-active-job-per-stack index). With `ifStack`, nothing
   * is stored unless the job's stack, of the job's owner, still has the job's name, revision and
   * worker, those drift ignores and is not being destroyed (what the job was made from, read
   * earlier): the answer says whether it was.
   */
  async insert(
    job: JobEntity,
    also: { stackStatus?: StackStatus; audit?: AuditEventEntity; ifStack?: { driftIgnores: string[] } } = {},
  ): Promise<boolean> {
    const params: unknown[] = [
      job.id,
      job.owner,
      job.type,
      job.stackId,
      job.stackName,
      job.revision,
      job.workerId,
      job.status,
      job.progress,
      job.attempts,
      job.maxAttempts,
      job.error,
      JSON.stringify(job.payload),
      job.results === null ? null : JSON.stringify(job.results),
      job.timeoutMs,
      job.createdAt.toISOString(),
      job.dispatchedAt?.toISOString() ?? null,
      job.startedAt?.toISOString() ?? null,
      job.finishedAt?.toISOString() ?? null,
      job.updatedAt.toISOString(),
      job.createdBy,
    ];
    const columns = `INSERT INTO jobs (id, owner, type, stack_id, stack_name, revision, worker_id, status, progress,
                                attempts, max_attempts, error, payload, results, timeout_ms, created_at,
                                dispatched_at, started_at, finished_at, updated_at, created_by)`;
    let insertJob = `${columns}
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14::jsonb, $15, $16, $17, $18,
                 $19, $20, $21)`;
    if (also.ifStack !== undefined) {
      params.push(JSON.stringify(also.ifStack.driftIgnores));
      insertJob = `${columns}
         SELECT $1::uuid, $2::text, $3::text, $4::uuid, $5::text, $6::int, $7::uuid, $8::text, $9::int, $10::int,
                $11::int, $12::text, $13::jsonb, $14::jsonb, $15::int, $16::timestamptz, $17::timestamptz,
                $18::timestamptz, $19::timestamptz, $20::timestamptz, $21::text
           FROM stacks s
          WHERE s.id = $4::uuid AND s.owner = $2::text AND s.name = $5::text AND s.revision = $6::int
            AND s.worker_id IS NOT DISTINCT FROM $7::uuid AND s.drift_ignores = $${params.length}::jsonb
            AND s.status <> 'destroying'`;
    }
    if (also.stackStatus === undefined && also.audit === undefined && also.ifStack === undefined) {
      await this.dataSource.query(prepared(insertJob), params);
      return true;
    }
    const parts = [`job AS (${insertJob} RETURNING id, stack_id, owner)`];
    if (also.stackStatus !== undefined) {
      params.push(also.stackStatus);
      parts.push(`stack AS (
        UPDATE stacks SET status = $${params.length}, updated_at = now()
          FROM job WHERE stacks.id = job.stack_id AND stacks.owner = job.owner)`);
    }
    const audit = also.audit;
    if (audit !== undefined) {
      params.push(
        audit.id,
        audit.at.toISOString(),
        audit.action,
        audit.outcome,
        audit.owner,
        audit.actor,
        audit.target,
        audit.ip,
        audit.requestId,
        JSON.stringify(audit.details),
      );
      const n = params.length - 10;
      parts.push(`audit AS (
        INSERT INTO audit_events (id, at, action, outcome, owner, actor, target, ip, request_id, details)
        SELECT $${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7}, $${n + 8},
               $${n + 9}, $${n + 10}::jsonb FROM job)`);
    }
    // Prepared: one of eight texts (with or without each part).
    const rows = await this.dataSource.query<unknown[]>(
      prepared(`WITH ${parts.join(', ')} SELECT 1 FROM job`),
      params,
    );
    return rows.length > 0;
  }

  findInOwner(owner: string, id: string): Promise<JobEntity | null> {
    return this.repo.findOneBy({ owner, id });
  }

  /** Unscoped: agents name jobs by id only, and a job is only ever sent to its own worker. */
  async findById(id: string): Promise<JobEntity | null> {
    const rows = await this.dataSource.query<JobRow[]>(JOB_BY_ID, [id]);
    return rows.length ? jobOf(rows[0]) : null;
  }

  /** A batch of jobs in one plain statement (the agents' final events read theirs so). */
  async findByIds(ids: string[]): Promise<JobEntity[]> {
    if (ids.length === 0) return [];
    const rows = await this.dataSource.query<JobRow[]>(JOBS_BY_IDS, [[...new Set(ids)]]);
    return rows.map(jobOf);
  }

  listInOwner(owner: string, filter: JobFilter, limit: number, after?: Cursor): Promise<JobEntity[]> {
    const qb = this.repo
      .createQueryBuilder('j')
      .where('j.owner = :owner', { owner })
      .orderBy('j.created_at', 'DESC')
      .addOrderBy('j.id', 'DESC')
      .limit(limit);
    if (filter.status) qb.andWhere('j.status = :status', { status: filter.status });
    if (filter.type) qb.andWhere('j.type = :type', { type: filter.type });
    if (filter.stackId) qb.andWhere('j.stack_id = :stackId', { stackId: filter.stackId });
    if (filter.workerId) qb.andWhere('j.worker_id = :workerId', { workerId: filter.workerId });
    if (after) qb.andWhere('(j.created_at, j.id) < (:at, :id)', { at: after.at, id: after.id });
    return qb.getMany();
  }

  /** Runs `work` in one transaction (JobLifecycle.move: a job and its stack commit together). */
  inTransaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /**
   * Moves a job from the state it is in now, if `event` applies there: one conditional UPDATE, so of
   * two racing transitions exactly one wins. Returns the updated job, or null when the event does
   * not apply (already finished, or another transition won).
   */
  async transition(
    id: string,
    event: JobEvent,
    patch: JobPatch | ((to: JobState) => JobPatch) = {},
    manager: EntityManager = this.dataSource.manager,
    /** The job as the caller just read it: saves the first read (a stale copy only costs a retry). */
    known?: JobEntity,
  ): Promise<{ job: JobEntity; from: JobState } | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const job = attempt === 0 && known?.id === id ? known : await manager.findOneBy(JobEntity, { id });
      if (!job) return null;
      const to = nextJobState(job.status, event);
      if (to === null) return null;
      const now = new Date();
      const changes: Partial<JobEntity> = {
        ...(typeof patch === 'function' ? patch(to) : patch),
        status: to,
        updatedAt: now,
      };
      const result = await manager.update(JobEntity, { id, status: job.status }, changes);
      if ((result.affected ?? 0) > 0) return { job: { ...job, ...changes }, from: job.status };
    }
    return null;
  }

  /**
   * Final events of a batch, one statement: each job moves to `to` with its patch if it is still in
   * the state the caller read (`job.status`; the caller checked the move with `nextJobState`), as
   * {@link transition} does for one. Returns the moved jobs as stored; a job that moved meanwhile is
   * left out (the caller takes the single-job path for it, which reads it again).
   */
  async finishMany<T>(
    rows: {
      job: JobEntity;
      to: JobState;
      patch: Required<Pick<JobPatch, 'results' | 'error' | 'progress' | 'finishedAt'>>;
    }[],
    /**
     * Run in the same transaction with the moved jobs: what else they change (their stacks) commits
     * with them, so no reader sees a job ended and its stack not yet.
     */
    within: (moved: { job: JobEntity; from: JobState }[], manager: EntityManager) => Promise<T>,
  ): Promise<{ moved: { job: JobEntity; from: JobState }[]; written: T | undefined }> {
    if (rows.length === 0) return { moved: [], written: undefined };
    return this.dataSource.transaction(async (manager) => {
      const moved = await this.finishRows(rows, manager);
      return { moved, written: moved.length > 0 ? await within(moved, manager) : undefined };
    });
  }

  private async finishRows(
    rows: Parameters<JobsRepository['finishMany']>[0],
    manager: EntityManager,
  ): Promise<{ job: JobEntity; from: JobState }[]> {
    const now = new Date();
    const [updated] = await manager.query<[{ id: string }[], number]>(
      prepared(
        `UPDATE jobs AS j
          SET status = u.status, results = u.results, error = u.error, progress = u.progress,
              finished_at = u.finished_at, updated_at = $8
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::int[], $7::timestamptz[])
              AS u (id, from_status, status, results, error, progress, finished_at)
        WHERE j.id = u.id AND j.status = u.from_status
        RETURNING j.id`,
      ),
      [
        rows.map((r) => r.job.id),
        rows.map((r) => r.job.status),
        rows.map((r) => r.to),
        rows.map((r) => (r.patch.results === null ? null : JSON.stringify(r.patch.results))),
        rows.map((r) => r.patch.error),
        rows.map((r) => r.patch.progress),
        rows.map((r) => r.patch.finishedAt?.toISOString() ?? null),
        now.toISOString(),
      ],
    );
    const moved = new Set(updated.map((u) => u.id));
    return rows
      .filter((r) => moved.has(r.job.id))
      .map((r) => ({ job: { ...r.job, ...r.patch, status: r.to, updatedAt: now }, from: r.job.status }));
  }

  /** Whether any job of any owner is queued (the `jobs_queue` index). */
  async anyQueued(): Promise<boolean> {
    const [row] = await this.dataSource.query<{ queued: boolean }[]>(
      prepared(`SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'queued') AS queued`),
      [],
    );
    return row.queued === true;
  }

  /**
   * The dispatcher's claim of queued jobs whose stack is placed on a worker live for the job's
   * owner (`live`: pairs of worker id and owner): one statement, no transaction, so a redeploy's job
   * waits one round trip in the queue, not four. The jobs come back dispatched, oldest first; `others`
   * tells whether queued jobs remain that need `claim` (without a worker yet, or for a connected
   * worker not live for their owner), as of the statement's start.
   */
  async claimPlaced(
    limit: number,
    live: { ids: string[]; owners: string[] },
    connectedWorkers: string[],
    now: Date,
  ): Promise<{ jobs: JobEntity[]; others: boolean }> {
    const rows = await this.dataSource.query<(JobRow & { others: boolean })[]>(CLAIM_PLACED, [
      this.claimLiterals.liveIds.of(live.ids),
      this.claimLiterals.liveOwners.of(live.owners),
      limit,
      now.toISOString(),
      this.claimLiterals.connected.of(connectedWorkers),
    ]);
    const jobs = rows
      .filter((r) => r.id !== null)
      .map(jobOf)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    return { jobs, others: rows[0]?.others === true };
  }

  /**
   * The queue: takes up to `limit` queued jobs that this replica could send (unplaced, or placed on
   * a worker connected here) with FOR UPDATE SKIP LOCKED, so replicas never take the same job, and
   * hands them to `decide` inside the transaction. `decide` returns the worker for each job it
   * placed; those become dispatched, the rest stay queued with the reason noted.
   */
  async claim(
    limit: number,
    connectedWorkers: string[],
    /** Gets the claim's transaction: what it reads there sees the claimed jobs' world as one. */
    decide: (
      jobs: JobEntity[],
      manager: EntityManager,
    ) => Promise<Map<string, { workerId: string } | { reason: string }>>,
  ): Promise<JobEntity[]> {
    return this.dataSource.transaction(async (manager) => {
      const queued = (
        await manager.query<JobRow[]>(
          `${SELECT_JOB} WHERE status = 'queued' AND (worker_id IS NULL OR worker_id = ANY($1::uuid[]))
            ORDER BY created_at ASC LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [uuidArray(connectedWorkers), limit],
        )
      ).map(jobOf);
      if (queued.length === 0) return [];
      const decisions = await decide(queued, manager);
      const placed: JobEntity[] = [];
      const now = new Date();
      const ids: string[] = [];
      const workers: string[] = [];
      const notes: { id: string; reason: string }[] = [];
      for (const job of queued) {
        const d = decisions.get(job.id);
        if (!d) continue;
        if ('workerId' in d) {
          ids.push(job.id);
          workers.push(d.workerId);
          placed.push({
            ...job,
            workerId: d.workerId,
            status: 'dispatched',
            attempts: job.attempts + 1,
            dispatchedAt: now,
            error: null,
            updatedAt: now,
          });
        } else if (d.reason !== job.error) notes.push({ id: job.id, reason: d.reason });
      }
      if (ids.length > 0) {
        await manager.query(
          prepared(
            `UPDATE jobs AS j
              SET status = 'dispatched', worker_id = u.worker_id, attempts = j.attempts + 1,
                  dispatched_at = $3, error = NULL, updated_at = $3
             FROM (SELECT unnest($1::uuid[]) AS id, unnest($2::uuid[]) AS worker_id) AS u
            WHERE j.id = u.id AND j.status = 'queued'`,
          ),
          [ids, workers, now.toISOString()],
        );
      }
      for (const note of notes) {
        await manager.update(JobEntity, { id: note.id, status: 'queued' }, { error: note.reason });
      }
      return placed;
    });
  }

  /** Agent confirmations for a batch of jobs: dispatched -> running, one statement; only a job's own worker counts. */
  async markAccepted(rows: { id: string; workerId: string }[], at: Date): Promise<JobEntity[]> {
    if (rows.length === 0) return [];
    const [updated] = await this.dataSource.query<[Record<string, unknown>[], number]>(
      prepared(
        `UPDATE jobs AS j SET status = 'running', started_at = $3, updated_at = $3
         FROM (SELECT unnest($1::uuid[]) AS id, unnest($2::uuid[]) AS worker_id) AS u
        WHERE j.id = u.id AND j.worker_id = u.worker_id AND j.status = ANY($4::text[])
        RETURNING j.id, j.type, j.worker_id, j.stack_id`,
      ),
      [
        rows.map((r) => r.id),
        rows.map((r) => r.workerId),
        at.toISOString(),
        statesAccepting({ type: 'accepted' }),
      ],
    );
    return updated.map((r) =>
      Object.assign(new JobEntity(), {
        id: r.id,
        type: r.type,
        workerId: r.worker_id,
        stackId: r.stack_id,
      }),
    );
  }

  async setProgress(rows: { id: string; workerId: string; progress: number }[]): Promise<void> {
    if (rows.length === 0) return;
    await this.dataSource.query(
      prepared(
        `UPDATE jobs AS j SET progress = GREATEST(j.progress, u.progress)
         FROM (SELECT unnest($1::uuid[]) AS id, unnest($2::uuid[]) AS worker_id, unnest($3::int[]) AS progress) AS u
        WHERE j.id = u.id AND j.worker_id = u.worker_id AND j.status IN ('running', 'cancelling')`,
      ),
      [rows.map((r) => r.id), rows.map((r) => r.workerId), rows.map((r) => r.progress)],
    );
  }

  /** Output lines of jobs; a line only lands on a job of the worker that sent it. */
  async appendLogs(lines: { jobId: string; workerId: string; time: Date; line: string }[]): Promise<void> {
    if (lines.length === 0) return;
    await this.dataSource.query(
      prepared(
        `INSERT INTO job_logs (job_id, time, line)
       SELECT u.job_id, u.time, u.line
         FROM (SELECT unnest($1::uuid[]) AS job_id, unnest($2::uuid[]) AS worker_id,
                      unnest($3::timestamptz[]) AS time, unnest($4::text[]) AS line) AS u
        WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = u.job_id AND jobs.worker_id = u.worker_id)`,
      ),
      [
        lines.map((l) => l.jobId),
        lines.map((l) => l.workerId),
        lines.map((l) => l.time.toISOString()),
        lines.map((l) => l.line),
      ],
    );
  }

  async logs(jobId: string, afterId: number, limit: number): Promise<JobLogLine[]> {
    const rows = await this.dataSource.query<{ id: string; time: Date; line: string }[]>(
      'SELECT id, time, line FROM job_logs WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3',
      [jobId, afterId, limit],
    );
    return rows.map((r) => ({ id: Number(r.id), time: new Date(r.time), line: r.line }));
  }

  /**
   * The sweep's work, oldest first and bounded, in one statement: unfinished jobs whose worker was
   * deleted (`workerRemoved`), dispatches no agent confirmed within `ackTimeoutMs` of `now`, and
   * dispatched, running or cancelling jobs past their own timeout (never a queued one). Only what is due is read: an idle or healthy queue costs one indexed
   * statement per sweep.
   */
  async forSweep(
    now: Date,
    ackTimeoutMs: number,
    limit = 1000,
  ): Promise<{ job: JobEntity; workerRemoved: boolean }[]> {
    const rows = await this.dataSource.query<(JobRow & { worker_removed: boolean })[]>(JOBS_FOR_SWEEP, [
      now,
      ackTimeoutMs,
      limit,
    ]);
    return rows.map((r) => ({ job: jobOf(r), workerRemoved: r.worker_removed }));
  }

  /** The ids of the newest jobs of every owner, newest first (the debug bundle). */
  async newestIds(limit: number): Promise<string[]> {
    const rows = await this.dataSource.query<{ id: string }[]>(
      'SELECT id FROM jobs ORDER BY created_at DESC, id DESC LIMIT $1',
      [limit],
    );
    return rows.map((r) => r.id);
  }

  async count(): Promise<number> {
    const rows = await this.dataSource.query<{ n: string }[]>('SELECT count(*) AS n FROM jobs');
    return Number(rows[0].n);
  }

  /** Jobs by id, newest first, without their payload (it holds the services' environment values). */
  findByIdsWithoutPayload(ids: string[]): Promise<JobEntity[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.repo
      .createQueryBuilder('j')
      .select([
        'j.id',
        'j.owner',
        'j.type',
        'j.stackId',
        'j.stackName',
        'j.revision',
        'j.workerId',
        'j.status',
        'j.progress',
        'j.attempts',
        'j.maxAttempts',
        'j.error',
        'j.results',
        'j.timeoutMs',
        'j.createdAt',
        'j.dispatchedAt',
        'j.startedAt',
        'j.finishedAt',
        'j.updatedAt',
        'j.createdBy',
      ])
      .where('j.id = ANY(:ids)', { ids })
      .orderBy('j.created_at', 'DESC')
      .addOrderBy('j.id', 'DESC')
      .getMany();
  }

  /** The last `lines` output lines of each job, oldest first, with each job's line count. */
  async logTails(jobIds: string[], lines: number): Promise<Map<string, JobLogTail>> {
    const tails = new Map<string, JobLogTail>(jobIds.map((id) => [id, { lines: [], total: 0 }]));
    if (jobIds.length === 0) return tails;
    const rows = await this.dataSource.query<
      { job_id: string; id: string | null; time: Date | null; line: string | null; total: string }[]
    >(
      `SELECT j.id AS job_id, l.id, l.time, l.line,
              (SELECT count(*) FROM job_logs c WHERE c.job_id = j.id) AS total
         FROM unnest($1::uuid[]) AS j (id)
         LEFT JOIN LATERAL (
           SELECT id, time, line FROM job_logs WHERE job_id = j.id ORDER BY id DESC LIMIT $2
         ) l ON true
        ORDER BY j.id, l.id`,
      [jobIds, lines],
    );
    for (const row of rows) {
      const tail = tails.get(row.job_id);
      if (!tail) continue;
      tail.total = Number(row.total);
      if (row.id !== null && row.time !== null && row.line !== null)
        tail.lines.push({ id: Number(row.id), time: new Date(row.time), line: row.line });
    }
    return tails;
  }

  /** A queued job whose worker is gone is placed afresh. */
  async unplace(id: string): Promise<void> {
    await this.repo.update({ id, status: 'queued' }, { workerId: null, updatedAt: new Date() });
  }

  /**
   * The worker's jobs queued for it or unfinished on it (dispatched, running, cancelling), gathered
   * with the other connecting or disconnecting agents' reads made meanwhile.
   */
  forAgent(workerId: string): Promise<JobEntity[]> {
    return this.agentJobReads.call(workerId);
  }
}
