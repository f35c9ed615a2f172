import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';
import type { JobEntity } from './entities/job.entity.js';
import { JobDispatcher, POLL_MS } from './job-dispatcher.js';
import { JobLifecycle } from './job-lifecycle.js';
import { JobsRepository } from './jobs.repository.js';

/** The sweep runs on one replica at a time, the holder of this lease (taken over within its TTL). */
export const JOBS_SWEEP_LEASE = 'jobs-sweep';
const SWEEP_LEASE_TTL_MS = 6_000;

/**
 * How often the sweep runs: a quarter of the shorter of JOB_ACK_TIMEOUT and JOB_TIMEOUT, between the
 * dispatcher's poll and a second (so with the defaults, 30 s and 10 min, once a second: a timeout is
 * acted on within a second of passing, and an idle service reads the queue once a second).
 */
export const sweepIntervalMs = (ackTimeoutMs: number, jobTimeoutMs: number): number =>
  Math.min(1000, Math.max(POLL_MS, Math.min(ackTimeoutMs, jobTimeoutMs) / 4));

/**
 * The sweep: jobs whose worker was deleted, dispatches no agent confirmed within JOB_ACK_TIMEOUT, and
 * jobs past their timeout.
 */
@Injectable()
export class JobSweeper implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('jobs');
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private stopped = false;

  constructor(
    private readonly repository: JobsRepository,
    private readonly lifecycle: JobLifecycle,
    private readonly dispatcher: JobDispatcher,
    private readonly leases: Leases,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const intervalMs = sweepIntervalMs(this.config.jobAckTimeoutMs, this.config.jobTimeoutMs);
    this.sweepTimer = every(this.logger, 'jobs-sweep', intervalMs, () => this.sweep());
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    // Given up at once: another replica need not wait out the TTL.
    await this.leases.release(JOBS_SWEEP_LEASE).catch(() => undefined);
  }

  /** The sweeps: unconfirmed dispatches, jobs past their timeout. */
  private async sweep(): Promise<void> {
    if (this.sweeping || this.stopped) return;
    this.sweeping = true;
    try {
      if (!(await this.leases.holds(JOBS_SWEEP_LEASE, SWEEP_LEASE_TTL_MS))) return;
      const now = Date.now();
      for (const { job, workerRemoved } of await this.repository.forSweep(
        new Date(now),
        this.config.jobAckTimeoutMs,
      )) {
        if (workerRemoved) {
          await this.workerRemoved(job);
          continue;
        }
        if (
          job.status === 'dispatched' &&
          job.dispatchedAt &&
          now - job.dispatchedAt.getTime() > this.config.jobAckTimeoutMs
        ) {
          await this.lifecycle.requeue(job, 'the agent did not confirm in time');
          continue;
        }
        const since = (job.startedAt ?? job.dispatchedAt)?.getTime();
        if (since !== undefined && now - since > job.timeoutMs) {
          const moved = await this.lifecycle.move(
            job.id,
            { type: 'abort' },
            {
              error: `timed out after ${job.timeoutMs} ms`,
              finishedAt: new Date(),
            },
          );
          if (moved) await this.lifecycle.sendCancel(moved.job, false);
        }
      }
    } catch (err) {
      this.logger.warn({ err }, 'job sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * The operator deleted the job's worker: a queued provision is placed afresh; anything else can no
   * longer reach its node and fails.
   */
  private async workerRemoved(job: JobEntity): Promise<void> {
    if (job.status === 'queued' && job.type === 'provision') {
      await this.repository.unplace(job.id);
      this.logger.warn(
        { job_id: job.id, job_type: job.type, worker_id: job.workerId },
        'worker removed; placing the job again',
      );
      this.dispatcher.wake();
      return;
    }
    await this.lifecycle.abort(job, `worker ${job.workerId} was removed`);
  }
}
