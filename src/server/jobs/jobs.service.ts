import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuditService, type AuditInput } from '../audit/audit.service.js';
import { isUuid } from '../common/ids.js';
import { type Page, cursorPage, byCreation } from '../common/pagination.js';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import type { JobCleanup, JobLogPage, JobView } from '../../contracts/api/jobs.js';
import type { StackStatus } from '../../contracts/api/stacks.js';
import { assertOperator } from '../auth/operator.js';
import type { ListJobsDto } from './dto/list-jobs.dto.js';
import { JobEntity, type JobPayload } from './entities/job.entity.js';
import { JobDispatcher } from './job-dispatcher.js';
import { JobEventWriter } from './job-event-writer.js';
import { JobLifecycle, type StackJobHooks } from './job-lifecycle.js';
import { isTerminal, type JobType } from './job-state.js';
import { jobFinished, jobNotFound, nothingToCleanUp, stackBusy } from './jobs.errors.js';
import { isActiveJobConflict, JobsRepository } from './jobs.repository.js';

export interface NewJob {
  /** The job's id when the caller needs it beforehand (for its audit row); a new one otherwise. */
  id?: string;
  owner: string;
  type: JobType;
  stackId: string;
  stackName: string;
  revision: number;
  /** The worker the stack is on; null lets placement choose. */
  workerId: string | null;
  payload: JobPayload;
  createdBy: string;
}

/** A job in the debug bundle: its view, its owner and the end of its output. */
export interface JobWithLogTail extends JobView {
  owner: string;
  log_lines_total: number;
  log_tail: { time: string; line: string }[];
}

/**
 * Jobs, as the operator and the other features see them: creation (the stacks feature), and the
 * operator's list, logs, cancel and cleanup. The queue's other movers are the dispatcher
 * (job-dispatcher.ts), the sweeper (job-sweeper.ts) and the agents' events (agent-job-events.ts,
 * job-event-writer.ts); every status change goes through `JobLifecycle.transition` or the batch
 * statements derived from the same table (job-state.ts).
 */
@Injectable()
export class JobsService {
  private readonly logger = new Logger('jobs');

  constructor(
    private readonly repository: JobsRepository,
    private readonly lifecycle: JobLifecycle,
    private readonly dispatcher: JobDispatcher,
    private readonly writer: JobEventWriter,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  /** The stacks feature's part in its jobs' moves (placement reservations, placed, finished). */
  setStackHooks(hooks: StackJobHooks): void {
    this.lifecycle.setStackHooks(hooks);
  }

  /**
   * Queues a job, or sends it to its agent at once when its worker is live on this replica (see
   * `newJob`); a stack with an unfinished job refuses another (409). With `noWorkerNeeded` the job
   * then succeeds at once (destroying a stack that was never placed). `stackStatus` (the status the
   * job gives its stack) and `audit` (the request's audit event) are stored in the job's own
   * statement: all of it or, on a 409, none.
   */
  async create(
    input: NewJob,
    options: { noWorkerNeeded?: boolean; stackStatus?: StackStatus; audit?: AuditInput } = {},
  ): Promise<JobEntity> {
    const noWorkerNeeded = options.noWorkerNeeded ?? false;
    const job = this.newJob(input, !noWorkerNeeded);
    await this.store(job, options);
    return this.afterInsert(job, noWorkerNeeded);
  }

  /**
   * `create`, unless the job's stack changed since the job was made from it (its name, revision,
   * worker, drift ignores, or it is being destroyed): then nothing is stored and the answer is null.
   */
  async createIfStackUnchanged(
    input: NewJob,
    driftIgnores: string[],
    options: { stackStatus?: StackStatus; audit?: AuditInput } = {},
  ): Promise<JobEntity | null> {
    const job = this.newJob(input, true);
    if (!(await this.store(job, { ...options, ifStack: { driftIgnores } }))) return null;
    return this.afterInsert(job, false);
  }

  /**
   * The job as it is inserted: queued or, when `mayGoAtOnce` and the dispatcher can send it from
   * here (its worker is live on this replica), dispatched already: it skips the queue.
   */
  private newJob(input: NewJob, mayGoAtOnce: boolean): JobEntity {
    const now = new Date();
    const atOnce = mayGoAtOnce && this.dispatcher.sendsAtOnce(input);
    return Object.assign(new JobEntity(), {
      id: input.id ?? randomUUID(),
      owner: input.owner,
      type: input.type,
      stackId: input.stackId,
      stackName: input.stackName,
      revision: input.revision,
      workerId: input.workerId,
      // Even a job with nothing to do is inserted queued: the one-active-job-per-stack index must
      // see it, so it cannot overtake a job of the stack that is still under way.
      status: atOnce ? 'dispatched' : 'queued',
      progress: 0,
      attempts: atOnce ? 1 : 0,
      maxAttempts: this.config.jobMaxAttempts,
      error: null,
      payload: input.payload,
      results: null,
      timeoutMs: this.config.jobTimeoutMs,
      createdAt: now,
      dispatchedAt: atOnce ? now : null,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
      createdBy: input.createdBy,
    });
  }

  /** Inserts the job with its request's changes; false when `ifStack` did not hold. */
  private async store(
    job: JobEntity,
    options: { stackStatus?: StackStatus; audit?: AuditInput; ifStack?: { driftIgnores: string[] } },
  ): Promise<boolean> {
    const audit = options.audit && this.audit.event(options.audit);
    let stored: boolean;
    try {
      stored = await this.repository.insert(job, {
        stackStatus: options.stackStatus,
        audit,
        ifStack: options.ifStack,
      });
    } catch (err) {
      if (isActiveJobConflict(err)) throw stackBusy(job.stackId);
      throw err;
    }
    if (stored && audit) this.audit.logRecord(audit);
    return stored;
  }

  /**
   * After the insert: a job with nothing to do ends at once, one stored as dispatched goes to its
   * agent, any other waits for the dispatcher.
   */
  private async afterInsert(job: JobEntity, noWorkerNeeded: boolean): Promise<JobEntity> {
    if (job.status === 'dispatched') {
      if (await this.dispatcher.sendNow(job)) return job;
      // Queued again (its agent went away meanwhile) or failed: as stored now.
      return (await this.repository.findById(job.id)) ?? job;
    }
    if (noWorkerNeeded) {
      let done;
      try {
        done = await this.lifecycle.move(
          job.id,
          { type: 'nothing_to_do' },
          {
            progress: 100,
            finishedAt: new Date(),
          },
        );
      } catch (err) {
        // No dispatcher would ever take this job (it has no worker): it fails, so the stack is
        // free for another try, and the request answers with the error.
        await this.lifecycle
          .abort(job, 'the job could not be finished; try again')
          .catch((abortErr: unknown) =>
            this.logger.warn({ err: abortErr, job_id: job.id }, 'job not failed after its error'),
          );
        throw err;
      }
      return done ? done.job : job;
    }
    this.logger.log(
      { job_id: job.id, job_type: job.type, stack_id: job.stackId, worker_id: job.workerId },
      'job queued',
    );
    this.dispatcher.wake();
    return job;
  }

  list(caller: Caller, query: ListJobsDto): Promise<Page<JobView>> {
    const owner = caller.owner;
    const filter = {
      status: query.status,
      type: query.type,
      stackId: query.stack_id,
      workerId: query.worker_id,
    };
    return cursorPage(
      query,
      (take, after) => this.repository.listInOwner(owner, filter, take, after),
      byCreation,
      view,
    );
  }

  async get(caller: Caller, id: string): Promise<JobView> {
    return view(await this.findOwned(caller, id));
  }

  async logs(caller: Caller, id: string, after = 0, limit = 1000): Promise<JobLogPage> {
    const job = await this.findOwned(caller, id);
    await this.writer.written();
    const rows = await this.repository.logs(job.id, after, limit);
    return {
      job_id: job.id,
      lines: rows.map((r) => ({ time: r.time.toISOString(), line: r.line })),
      next_after: rows.length > 0 ? rows[rows.length - 1].id : after,
      complete: isTerminal(job.status) && rows.length < limit,
    };
  }

  /** Every owner's jobs in all, and the ids of the newest `limit`, newest first (operator only). */
  async newestEveryOwner(caller: Caller, limit: number): Promise<{ total: number; ids: string[] }> {
    assertOperator(caller);
    return { total: await this.repository.count(), ids: await this.repository.newestIds(limit) };
  }

  /** These jobs of any owner, newest first, each with its owner and last `lines` output lines. */
  async withLogTails(caller: Caller, ids: string[], lines: number): Promise<JobWithLogTail[]> {
    assertOperator(caller);
    await this.writer.written();
    const jobs = await this.repository.findByIdsWithoutPayload(ids);
    const tails = await this.repository.logTails(
      jobs.map((j) => j.id),
      lines,
    );
    return jobs.map((job) => {
      const tail = tails.get(job.id) ?? { lines: [], total: 0 };
      return {
        ...view(job),
        owner: job.owner,
        log_lines_total: tail.total,
        log_tail: tail.lines.map((l) => ({ time: l.time.toISOString(), line: l.line })),
      };
    });
  }

  /** Queued: cancelled at once (200). Dispatched or running: cancelling until the agent confirms (202). */
  async cancel(caller: Caller, id: string): Promise<{ status: 200 | 202; job: JobView }> {
    const job = await this.findOwned(caller, id);
    if (job.status === 'cancelling') {
      await this.lifecycle.sendCancel(job, false);
      return { status: 202, job: view(job) };
    }
    const moved = await this.lifecycle.move(job.id, { type: 'cancel' }, (to) =>
      to === 'cancelled' ? { finishedAt: new Date() } : {},
    );
    if (!moved) {
      const now = await this.findOwned(caller, id);
      if (now.status === 'cancelling') return { status: 202, job: view(now) };
      throw jobFinished(id, now.status);
    }
    await this.audit.record({ action: 'job.cancel_requested', owner: job.owner, target: job.id });
    if (moved.job.status === 'cancelled') return { status: 200, job: view(moved.job) };
    await this.lifecycle.sendCancel(moved.job, false);
    this.logger.log({ job_id: job.id, job_type: job.type, worker_id: job.workerId }, 'job cancelling');
    return { status: 202, job: view(moved.job) };
  }

  /**
   * Forces cleanup: an unfinished job ends as failed with reason `cleaned_up` and its stack is free
   * again; the worker, when connected, stops the job and reverts the stack on the node to the state
   * the last successful job applied. A failed or cancelled job only gets the revert on the worker.
   */
  async cleanup(caller: Caller, id: string): Promise<JobCleanup> {
    const job = await this.findOwned(caller, id);
    if (job.status === 'succeeded') throw nothingToCleanUp(id);
    let current = job;
    if (!isTerminal(job.status)) {
      const moved = await this.lifecycle.abort(job, 'cleaned_up');
      current = moved ? moved.job : await this.findOwned(caller, id);
    }
    const notified = current.workerId !== null && (await this.lifecycle.sendCancel(current, true));
    await this.audit.record({
      action: 'job.cleaned_up',
      owner: job.owner,
      target: job.id,
      details: { previous_status: job.status, worker_notified: notified },
    });
    this.logger.log(
      { job_id: job.id, job_type: job.type, worker_id: job.workerId, previous_status: job.status },
      'job cleaned up',
    );
    return { job: view(current), worker_notified: notified };
  }

  private async findOwned(caller: Caller, id: string): Promise<JobEntity> {
    const job = isUuid(id) ? await this.repository.findInOwner(caller.owner, id) : null;
    if (!job) throw jobNotFound(id);
    return job;
  }
}

export function view(job: JobEntity): JobView {
  return {
    id: job.id,
    type: job.type,
    stack_id: job.stackId,
    stack_name: job.stackName,
    revision: job.revision,
    worker_id: job.workerId,
    status: job.status,
    progress: job.progress,
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    error: job.error,
    results: job.results,
    created_at: job.createdAt.toISOString(),
    dispatched_at: job.dispatchedAt?.toISOString() ?? null,
    started_at: job.startedAt?.toISOString() ?? null,
    finished_at: job.finishedAt?.toISOString() ?? null,
  };
}
