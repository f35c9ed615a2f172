import { Injectable, Logger } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Histogram } from 'prom-client';
import type { EntityManager } from 'typeorm';
import { CommandRelay } from '../agent-gateway/command-relay.js';
import { METRIC } from '../metrics/metric-names.js';
import type { JobEntity } from './entities/job.entity.js';
import { JobEventWriter } from './job-event-writer.js';
import { isTerminal, nextJobState, type JobEvent, type JobState } from './job-state.js';
import { JobsRepository } from './jobs.repository.js';

/** What the stacks feature does when its jobs move; registered at start. */
export interface StackJobHooks {
  /** CPU and memory reserved on each worker by the stacks placed there (read through `manager`). */
  reservations(
    workerIds: string[],
    manager: EntityManager,
  ): Promise<Map<string, { cpu: number; memory_bytes: number }>>;
  /** Jobs were placed on workers (their stacks had none yet): one call per dispatch round. */
  placed(jobs: JobEntity[]): Promise<void>;
  /**
   * Jobs reached a terminal status (one job on its own, or jobs of different stacks that ended in
   * one batch), in two parts: the stacks' writes inside the transaction that moved the jobs (through
   * `manager`), then, after it committed, the rest, given what the first part answered.
   * `reachedNode` as for {@link reachedNode}.
   */
  finishingMany(jobs: JobEntity[], reachedNode: boolean, manager: EntityManager): Promise<unknown>;
  /**
   * Destroy jobs are about to succeed (before the transaction that moves them, in which their stacks
   * are deleted): what has to go before the stacks' rows do.
   */
  destroySucceeding(jobs: JobEntity[]): Promise<void>;
  finishedMany(jobs: JobEntity[], reachedNode: boolean, written: unknown): Promise<void>;
  /** The job's agent reported its end: the node now reflects this job (drift compares from here). */
  reachedNode(job: JobEntity): Promise<void>;
}

type Moved = Awaited<ReturnType<JobsRepository['transition']>>;

/**
 * How a job moves, for everything that moves one (the operator API, the dispatcher, the sweeper and
 * the agents' events): the logged state change, the way back to the queue, the bookkeeping of a job
 * that ended (metrics, its log record, the stack's hooks), and the cancel command to its agent.
 * A job that ends or goes back to the queue asks the dispatcher for a round; the dispatcher depends
 * on this class, so it registers that wish with {@link onQueueChanged} instead.
 */
@Injectable()
export class JobLifecycle {
  private readonly logger = new Logger('jobs');
  private hooks: StackJobHooks | undefined;
  private readonly queueListeners: (() => void)[] = [];

  constructor(
    private readonly repository: JobsRepository,
    private readonly relay: CommandRelay,
    private readonly writer: JobEventWriter,
    @InjectMetric(METRIC.jobs) private readonly jobsTotal: Counter<string>,
    @InjectMetric(METRIC.jobDuration) private readonly jobDuration: Histogram<string>,
  ) {}

  setStackHooks(hooks: StackJobHooks): void {
    this.hooks = hooks;
  }

  /** Called whenever a job may now be dispatched: one ended (its stack is free) or was queued again. */
  onQueueChanged(listener: () => void): void {
    this.queueListeners.push(listener);
  }

  /** The stacks' reservations per worker, for placement; none without stacks. */
  reservations(
    workerIds: string[],
    manager: EntityManager,
  ): Promise<Map<string, { cpu: number; memory_bytes: number }>> {
    return this.hooks
      ? this.hooks.reservations(workerIds, manager)
      : Promise.resolve(new Map<string, { cpu: number; memory_bytes: number }>());
  }

  async placed(jobs: JobEntity[]): Promise<void> {
    if (this.hooks && jobs.length > 0) await this.hooks.placed(jobs);
  }

  async reachedNode(job: JobEntity): Promise<void> {
    if (this.hooks) await this.hooks.reachedNode(job);
  }

  /**
   * Every single-job state change: the repository's conditional UPDATE and, when the job ends, its
   * stack's status ({@link StackJobHooks.finishingMany}) in the same transaction, so no reader sees
   * a job ended while its stack is still `deploying`, and a failure or crash between the two cannot
   * leave the stack so. After the commit: a debug record of the change and, for a job that ended,
   * the rest of its bookkeeping ({@link finishedMany}: metrics, its log record, the stack's
   * publishing, a dispatch round). Null when the event no longer applies (the job moved meanwhile).
   */
  async move(
    id: string,
    event: JobEvent,
    patch: Parameters<JobsRepository['transition']>[2] = {},
    options: { known?: JobEntity; reachedNode?: boolean } = {},
  ): Promise<Moved> {
    const reachedNode = options.reachedNode ?? false;
    let known = options.known;
    if (this.hooks && (event.type === 'succeeded' || event.type === 'nothing_to_do')) {
      known ??= (await this.repository.findById(id)) ?? undefined;
      if (known?.type === 'destroy' && nextJobState(known.status, event) === 'succeeded')
        await this.hooks.destroySucceeding([known]);
    }
    const { moved, written } = await this.repository.inTransaction(async (manager) => {
      const moved = await this.repository.transition(id, event, patch, manager, known);
      const ended = moved !== null && isTerminal(moved.job.status);
      return { moved, written: ended ? await this.finishingMany([moved], reachedNode, manager) : undefined };
    });
    if (!moved) return null;
    this.logTransition(moved.job, moved.from, event.type);
    if (isTerminal(moved.job.status)) await this.finishedMany([moved], reachedNode, written);
    return moved;
  }

  /** The debug record of a state change (for changes written in a batch statement too). */
  logTransition(job: JobEntity, from: JobState, event: JobEvent['type']): void {
    this.logger.debug(
      {
        job_id: job.id,
        job_type: job.type,
        worker_id: job.workerId,
        from,
        to: job.status,
        event,
        ...(job.error ? { reason: job.error } : {}),
      },
      'job state changed',
    );
  }

  /** Fails an unfinished job with `error`, with its bookkeeping; null when it had already moved on. */
  abort(job: JobEntity, error: string): Promise<Moved> {
    return this.move(job.id, { type: 'abort' }, { error, finishedAt: new Date() });
  }

  /** A dispatch nobody confirmed: back to the queue, or failed once its attempts are used up. */
  async requeue(job: JobEntity, reason: string): Promise<void> {
    const event: JobEvent = job.attempts >= job.maxAttempts ? { type: 'abort' } : { type: 'requeue' };
    const moved = await this.move(
      job.id,
      event,
      event.type === 'abort'
        ? {
            error: `no agent confirmed the job after ${job.attempts} attempts (${reason})`,
            finishedAt: new Date(),
          }
        : {},
    );
    if (!moved || isTerminal(moved.job.status)) return;
    this.logger.warn(
      { job_id: job.id, job_type: job.type, worker_id: job.workerId, reason },
      'job queued again',
    );
    this.queueChanged();
  }

  /** Destroy jobs about to succeed, before their transaction ({@link StackJobHooks.destroySucceeding}). */
  async destroySucceeding(jobs: JobEntity[]): Promise<void> {
    if (this.hooks && jobs.length > 0) await this.hooks.destroySucceeding(jobs);
  }

  /**
   * The stacks' part of a job's end inside the transaction that moved it (one statement for the
   * jobs of a batch): what {@link finishedMany} completes after the commit.
   */
  finishingMany(
    moved: { job: JobEntity; from: JobState }[],
    reachedNode: boolean,
    manager: EntityManager,
  ): Promise<unknown> {
    return this.hooks
      ? this.hooks.finishingMany(
          moved.map((m) => m.job),
          reachedNode,
          manager,
        )
      : Promise.resolve(undefined);
  }

  /** After the commit: metrics and the log record of each job, the stacks' remaining bookkeeping, one wake. */
  async finishedMany(
    moved: { job: JobEntity; from: JobState }[],
    reachedNode: boolean,
    written: unknown,
  ): Promise<void> {
    if (moved.length === 0) return;
    for (const { job, from } of moved) this.recordEnd(job, from);
    try {
      if (this.hooks)
        await this.hooks.finishedMany(
          moved.map((m) => m.job),
          reachedNode,
          written,
        );
    } finally {
      this.queueChanged();
    }
  }

  /** Metrics and the log record of a job that ended. */
  private recordEnd(job: JobEntity, from: JobState): void {
    const end = job.finishedAt ?? new Date();
    const start = job.startedAt ?? job.dispatchedAt ?? job.createdAt;
    const durationMs = Math.max(0, end.getTime() - start.getTime());
    this.jobsTotal.inc({ type: job.type, status: job.status });
    this.jobDuration.observe({ type: job.type, status: job.status }, durationMs / 1000);
    const level = job.status === 'failed' ? 'warn' : 'log';
    this.logger[level](
      {
        job_id: job.id,
        job_type: job.type,
        worker_id: job.workerId,
        stack_id: job.stackId,
        duration_ms: durationMs,
        status: job.status,
        previous_status: from,
        error: job.error,
      },
      `job ${job.status}`,
    );
    this.writer.forgetLineCount(job.id);
  }

  /**
   * Tells the job's agent to stop it (and, with `cleanup`, to revert the stack), through whichever
   * replica holds its stream; false if no replica does.
   */
  sendCancel(job: JobEntity, cleanup: boolean): Promise<boolean> {
    if (!job.workerId) return Promise.resolve(false);
    return this.relay.deliver(job.workerId, { cancel_job: { job_id: job.id, cleanup } });
  }

  private queueChanged(): void {
    for (const listener of this.queueListeners) listener();
  }
}
