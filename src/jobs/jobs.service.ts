import { isUuid } from '../common/ids.js';
import { every } from '../common/periodic.js';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { randomUUID } from 'node:crypto';
import type { Counter, Histogram } from 'prom-client';
import {
  serverMessageBytes,
  type HelloMsg,
  type JobCommandMsg,
  type JobEventMsg,
} from '../agent-protocol/index.js';
import {
  MAX_AGENT_MESSAGE_BYTES,
  MAX_JOB_ERROR_CHARS,
  MAX_JOB_LINE_CHARS,
  MAX_JOB_LINES_PER_EVENT,
} from '../agent-protocol/limits.js';
import { AgentSessions, type AgentWorkHandler } from '../agent-gateway/agent-sessions.js';
import { AuditService } from '../audit/audit.service.js';
import { type Page, cursorPage, byCreation } from '../common/pagination.js';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import type { JobCleanup, JobLogPage, JobView } from '../contracts/api/jobs.js';
import { METRIC } from '../metrics/metric-names.js';
import { WorkersService } from '../workers/workers.service.js';
import type { ListJobsDto } from './dto/list-jobs.dto.js';
import { JobEntity, type JobPayload } from './entities/job.entity.js';
import { isTerminal, type JobEvent, type JobState, type JobType } from './job-state.js';
import { jobFinished, jobNotFound, nothingToCleanUp, stackBusy } from './jobs.errors.js';
import { isActiveJobConflict, JobsRepository } from './jobs.repository.js';
import { place, type PlacementCandidate } from './placement.js';

/** Jobs taken from the queue per dispatcher round. */
const CLAIM_BATCH = 200;
/** The dispatcher looks at the queue this often even when nothing woke it (other replicas' jobs). */
const POLL_MS = 250;
/** Agent confirmations, progress and output lines are written in batches this often. */
const FLUSH_MS = 20;
/** Output kept per job; later lines are counted, not stored. */
const MAX_LOG_LINES = 5000;
/** Lines waiting for the next write, all jobs; more are dropped (and counted) until it ran. */
const MAX_BUFFERED_LINES = 50_000;
/** Jobs whose line count is remembered. */
const MAX_COUNTED_JOBS = 10_000;
/** Final job events waiting for a write; more are dropped (the agent sends them again on reconnect). */
const MAX_BUFFERED_RESULTS = 10_000;

/** Text PostgreSQL accepts: no NUL, no other control characters but tab. */
// eslint-disable-next-line no-control-regex -- removing control characters is the point
const printable = (text: string): string => text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');

export interface NewJob {
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

/** What the stacks feature does when its jobs move; registered at start. */
export interface StackJobHooks {
  /** CPU and memory reserved on each worker by the stacks placed there. */
  reservations(workerIds: string[]): Promise<Map<string, { cpu: number; memory_bytes: number }>>;
  /** Jobs were placed on workers (their stacks had none yet): one call per dispatch round. */
  placed(jobs: JobEntity[]): Promise<void>;
  /** A job of the stack reached a terminal status; `reachedNode` as for {@link reachedNode}. */
  finished(job: JobEntity, reachedNode: boolean): Promise<void>;
  /** The job's agent reported its end: the node now reflects this job (drift compares from here). */
  reachedNode(job: JobEntity): Promise<void>;
}

/**
 * Jobs: the queue in PostgreSQL, placement, dispatch over the agent stream, the agents' events, and
 * the operator's cancel and cleanup. Every status change goes through `JobsRepository.transition`
 * or the batch statements derived from the same table (job-state.ts).
 */
@Injectable()
export class JobsService implements AgentWorkHandler, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('jobs');
  private hooks: StackJobHooks | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private dispatching = false;
  /** A wake arrived during a round: run another one after it. */
  private roundRequested = false;
  private stopped = false;
  private accepted: { id: string; workerId: string }[] = [];
  private progress = new Map<string, { workerId: string; progress: number }>();
  private lines: { jobId: string; workerId: string; time: Date; line: string }[] = [];
  /** Lines seen per job (bounded: the oldest entries go first). */
  private lineCounts = new Map<string, number>();
  private droppedLines = 0;
  /** Final job events waiting for the next write. */
  private results: { workerId: string; event: JobEventMsg }[] = [];
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly repository: JobsRepository,
    private readonly sessions: AgentSessions,
    private readonly workers: WorkersService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    @InjectMetric(METRIC.jobs) private readonly jobsTotal: Counter<string>,
    @InjectMetric(METRIC.jobDuration) private readonly jobDuration: Histogram<string>,
  ) {}

  setStackHooks(hooks: StackJobHooks): void {
    this.hooks = hooks;
  }

  onModuleInit(): void {
    this.sessions.addWorkHandler(this);
    // A dispatch round on every tick, whether or not the sweep of timeouts is still going.
    this.pollTimer = setInterval(() => this.wake(), POLL_MS);
    this.pollTimer.unref();
    this.sweepTimer = every(this.logger, 'jobs-sweep', POLL_MS, () => this.sweep());
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.sweepTimer);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flush();
  }

  // ---- creation and the operator API ----

  /**
   * Queues a job; a stack with an unfinished job refuses another (409). With `noWorkerNeeded` the job
   * then succeeds at once (destroying a stack that was never placed).
   */
  async create(input: NewJob, noWorkerNeeded = false): Promise<JobEntity> {
    const now = new Date();
    const job = Object.assign(new JobEntity(), {
      id: randomUUID(),
      owner: input.owner,
      type: input.type,
      stackId: input.stackId,
      stackName: input.stackName,
      revision: input.revision,
      workerId: input.workerId,
      // Even a job with nothing to do is inserted queued: the one-active-job-per-stack index must
      // see it, so it cannot overtake a job of the stack that is still under way.
      status: 'queued',
      progress: 0,
      attempts: 0,
      maxAttempts: this.config.jobMaxAttempts,
      error: null,
      payload: input.payload,
      results: null,
      timeoutMs: this.config.jobTimeoutMs,
      createdAt: now,
      dispatchedAt: null,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
      createdBy: input.createdBy,
    });
    try {
      await this.repository.insert(job);
    } catch (err) {
      if (isActiveJobConflict(err)) throw stackBusy(input.stackId);
      throw err;
    }
    if (noWorkerNeeded) {
      const done = await this.transition(
        job.id,
        { type: 'nothing_to_do' },
        {
          progress: 100,
          finishedAt: new Date(),
        },
      );
      if (done) {
        await this.finished(done.job, done.from);
        return done.job;
      }
      return job;
    }
    this.logger.log(
      { job_id: job.id, job_type: job.type, stack_id: job.stackId, worker_id: job.workerId },
      'job queued',
    );
    this.wake();
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
    await this.flushing;
    const rows = await this.repository.logs(job.id, after, limit);
    return {
      job_id: job.id,
      lines: rows.map((r) => ({ time: r.time.toISOString(), line: r.line })),
      next_after: rows.length > 0 ? rows[rows.length - 1].id : after,
      complete: isTerminal(job.status) && rows.length < limit,
    };
  }

  /** Queued: cancelled at once (200). Dispatched or running: cancelling until the agent confirms (202). */
  async cancel(caller: Caller, id: string): Promise<{ status: 200 | 202; job: JobView }> {
    const job = await this.findOwned(caller, id);
    if (job.status === 'cancelling') {
      this.sendCancel(job, false);
      return { status: 202, job: view(job) };
    }
    const moved = await this.transition(job.id, { type: 'cancel' }, (to) =>
      to === 'cancelled' ? { finishedAt: new Date() } : {},
    );
    if (!moved) {
      const now = await this.findOwned(caller, id);
      if (now.status === 'cancelling') return { status: 202, job: view(now) };
      throw jobFinished(id, now.status);
    }
    await this.audit.record({ action: 'job.cancel_requested', owner: job.owner, target: job.id });
    if (moved.job.status === 'cancelled') {
      await this.finished(moved.job, moved.from);
      return { status: 200, job: view(moved.job) };
    }
    this.sendCancel(moved.job, false);
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
      const moved = await this.transition(
        job.id,
        { type: 'abort' },
        {
          error: 'cleaned_up',
          finishedAt: new Date(),
        },
      );
      if (moved) {
        current = moved.job;
        await this.finished(current, moved.from);
      } else current = await this.findOwned(caller, id);
    }
    const notified = current.workerId !== null && this.sendCancel(current, true);
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

  // ---- the agents (AgentWorkHandler) ----

  connected(workerId: string, hello: HelloMsg): void {
    void this.reconcileWorker(workerId, new Set(hello.active_job_ids ?? [])).catch((err: unknown) =>
      this.logger.warn({ err, worker_id: workerId }, 'reconciling jobs of a reconnected agent failed'),
    );
  }

  disconnected(workerId: string): void {
    // Jobs the agent never confirmed go back to the queue; running ones wait for the agent to come
    // back and report, or for their timeout, cancel or cleanup.
    void this.repository
      .activeOnWorker(workerId)
      .then(async (jobs) => {
        for (const job of jobs.filter((j) => j.status === 'dispatched'))
          await this.requeue(job, 'agent disconnected');
      })
      .catch((err: unknown) =>
        this.logger.warn({ err, worker_id: workerId }, 'requeue after disconnect failed'),
      );
  }

  jobEvent(workerId: string, event: JobEventMsg): void {
    if (!isUuid(event.job_id)) return;
    const lines = (event.lines ?? []).slice(0, MAX_JOB_LINES_PER_EVENT);
    for (const line of lines) this.bufferLine(event.job_id, workerId, line);
    switch (event.phase) {
      case 'accepted':
        this.accepted.push({ id: event.job_id, workerId });
        this.scheduleFlush();
        return;
      case 'progress':
        this.progress.set(event.job_id, {
          workerId,
          progress: Math.max(0, Math.min(100, Math.floor(Number(event.progress) || 0))),
        });
        this.scheduleFlush();
        return;
      case 'succeeded':
      case 'failed':
      case 'cancelled':
        // Handled in the next write, after this job's confirmation and lines.
        if (this.results.length < MAX_BUFFERED_RESULTS) this.results.push({ workerId, event });
        else
          this.logger.warn({ job_id: event.job_id, worker_id: workerId }, 'job result dropped: buffer full');
        this.scheduleFlush();
        return;
      default:
        if (lines.length > 0) this.scheduleFlush();
    }
  }

  // ---- dispatch ----

  /** Asks for a dispatcher round soon (a new job, a connected agent). */
  wake(): void {
    if (this.stopped) return;
    if (this.dispatching) {
      this.roundRequested = true;
      return;
    }
    this.dispatching = true;
    void this.dispatchRound()
      .catch((err: unknown) => this.logger.warn({ err }, 'dispatch round failed'))
      .finally(() => {
        this.dispatching = false;
        if (this.roundRequested) {
          this.roundRequested = false;
          setImmediate(() => this.wake());
        }
      });
  }

  private async dispatchRound(): Promise<void> {
    for (;;) {
      const connected = this.sessions.connectedIds();
      if (connected.length === 0) return;
      // Read before the claim's transaction: on the embedded database every connection shares one
      // backend, and a second connection's query inside the transaction would wait forever.
      const reserved = this.hooks
        ? await this.hooks.reservations(connected)
        : new Map<string, { cpu: number; memory_bytes: number }>();
      // Jobs that had no worker yet: their stack learns where it runs.
      const newlyPlaced = new Set<string>();
      const sent = await this.repository.claim(CLAIM_BATCH, connected, (jobs) => {
        for (const job of jobs) if (job.workerId === null) newlyPlaced.add(job.id);
        return Promise.resolve(this.decide(jobs, reserved));
      });
      const unsent: JobEntity[] = [];
      const refused: { job: JobEntity; bytes: number }[] = [];
      for (const job of sent) {
        const command: JobCommandMsg = {
          job_id: job.id,
          type: job.type,
          stack_id: job.stackId,
          stack_name: job.payload.command.stack_name,
          revision: job.revision,
          services: job.payload.command.services,
          timeout_ms: job.timeoutMs,
          attempt: job.attempts,
          keep: job.payload.command.keep ?? [],
          replace: job.payload.command.replace ?? [],
        };
        // Only a definition stored before the size limits can be this big; sending it would end
        // the agent's stream (and leave every stack of the node unknown), so the job fails instead.
        const bytes = serverMessageBytes({ job: command });
        if (bytes > MAX_AGENT_MESSAGE_BYTES) {
          refused.push({ job, bytes });
          continue;
        }
        if (!this.sessions.send(job.workerId!, { job: command })) {
          unsent.push(job);
          continue;
        }
        this.logger.log(
          { job_id: job.id, job_type: job.type, worker_id: job.workerId, attempt: job.attempts },
          'job dispatched',
        );
      }
      // Every command of the round is on its stream before anything else waits for the database.
      const placed = sent.filter(
        (job) => newlyPlaced.has(job.id) && !unsent.includes(job) && !refused.some((r) => r.job === job),
      );
      if (this.hooks && placed.length > 0) await this.hooks.placed(placed);
      for (const job of unsent) await this.requeue(job, 'agent not connected');
      for (const { job, bytes } of refused) await this.tooLarge(job, bytes);
      if (sent.length < CLAIM_BATCH) return;
    }
  }

  private async tooLarge(job: JobEntity, bytes: number): Promise<void> {
    const moved = await this.transition(
      job.id,
      { type: 'abort' },
      {
        error: `the job's command takes ${bytes} bytes and an agent accepts at most ${MAX_AGENT_MESSAGE_BYTES}: replace the stack's definition with one within the size limits (docs/stack-definitions.md)`,
        finishedAt: new Date(),
      },
    );
    if (moved) await this.finished(moved.job, moved.from);
  }

  /** Placement for a batch, counting what earlier jobs of the same batch reserve. */
  private decide(
    jobs: JobEntity[],
    reserved: Map<string, { cpu: number; memory_bytes: number }>,
  ): Map<string, { workerId: string } | { reason: string }> {
    const decisions = new Map<string, { workerId: string } | { reason: string }>();
    const byOwner = new Map<string, PlacementCandidate[]>();
    const candidatesOf = (owner: string): PlacementCandidate[] => {
      let list = byOwner.get(owner);
      if (!list) {
        list = this.workers.liveWorkers(owner).map((w) => ({
          ...w,
          reserved: { ...(reserved.get(w.id) ?? { cpu: 0, memory_bytes: 0 }) },
        }));
        byOwner.set(owner, list);
      }
      return list;
    };
    for (const job of jobs) {
      const candidates = candidatesOf(job.owner);
      if (job.type === 'destroy' || job.workerId !== null) {
        // A job for a placed stack goes to that worker and no other.
        const worker = candidates.find((w) => w.id === job.workerId);
        decisions.set(
          job.id,
          worker ? { workerId: worker.id } : { reason: `waiting for worker ${job.workerId} to connect` },
        );
        continue;
      }
      const req = { ...job.payload.placement, current: null };
      const result = place(candidates, req);
      if (result.ok) {
        decisions.set(job.id, { workerId: result.workerId });
        const chosen = candidates.find((w) => w.id === result.workerId)!;
        chosen.reserved.cpu += req.cpu;
        chosen.reserved.memory_bytes += req.memory_bytes;
      } else decisions.set(job.id, { reason: `placement: ${result.reason}` });
    }
    for (const job of jobs) {
      const decision = decisions.get(job.id);
      if (decision && 'reason' in decision)
        this.logger.debug(
          { job_id: job.id, job_type: job.type, reason: decision.reason },
          'job stays queued',
        );
    }
    return decisions;
  }

  /** Every single-job state change: the repository's conditional UPDATE, and a debug record of it. */
  private async transition(
    ...args: Parameters<JobsRepository['transition']>
  ): ReturnType<JobsRepository['transition']> {
    const moved = await this.repository.transition(...args);
    if (moved)
      this.logger.debug(
        {
          job_id: moved.job.id,
          job_type: moved.job.type,
          worker_id: moved.job.workerId,
          from: moved.from,
          to: moved.job.status,
          event: args[1].type,
          ...(moved.job.error ? { reason: moved.job.error } : {}),
        },
        'job state changed',
      );
    return moved;
  }

  private async requeue(job: JobEntity, reason: string): Promise<void> {
    const event: JobEvent = job.attempts >= job.maxAttempts ? { type: 'abort' } : { type: 'requeue' };
    const moved = await this.transition(
      job.id,
      event,
      event.type === 'abort'
        ? {
            error: `no agent confirmed the job after ${job.attempts} attempts (${reason})`,
            finishedAt: new Date(),
          }
        : {},
    );
    if (!moved) return;
    if (moved.job.status === 'failed') await this.finished(moved.job, moved.from);
    else {
      this.logger.warn(
        { job_id: job.id, job_type: job.type, worker_id: job.workerId, reason },
        'job queued again',
      );
      this.wake();
    }
  }

  /** The sweeps: unconfirmed dispatches, jobs past their timeout. */
  private sweeping = false;
  private async sweep(): Promise<void> {
    if (this.sweeping || this.stopped) return;
    this.sweeping = true;
    try {
      for (const job of await this.repository.onRemovedWorkers()) await this.workerRemoved(job);
      const now = Date.now();
      const active = await this.repository.findByStatus(['dispatched', 'running', 'cancelling']);
      for (const job of active) {
        if (
          job.status === 'dispatched' &&
          job.dispatchedAt &&
          now - job.dispatchedAt.getTime() > this.config.jobAckTimeoutMs
        ) {
          await this.requeue(job, 'the agent did not confirm in time');
          continue;
        }
        const since = (job.startedAt ?? job.dispatchedAt)?.getTime();
        if (since !== undefined && now - since > job.timeoutMs) {
          const moved = await this.transition(
            job.id,
            { type: 'abort' },
            {
              error: `timed out after ${job.timeoutMs} ms`,
              finishedAt: new Date(),
            },
          );
          if (moved) {
            this.sendCancel(moved.job, false);
            await this.finished(moved.job, moved.from);
          }
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
      this.wake();
      return;
    }
    const moved = await this.transition(
      job.id,
      { type: 'abort' },
      {
        error: `worker ${job.workerId} was removed`,
        finishedAt: new Date(),
      },
    );
    if (moved) await this.finished(moved.job, moved.from);
  }

  /** After a reconnect: what the agent still runs is running; what it lost has failed. */
  private async reconcileWorker(workerId: string, active: Set<string>): Promise<void> {
    const jobs = await this.repository.activeOnWorker(workerId);
    for (const job of jobs) {
      if (active.has(job.id)) {
        if (job.status === 'dispatched') {
          this.accepted.push({ id: job.id, workerId });
          this.scheduleFlush();
        } else if (job.status === 'cancelling') this.sendCancel(job, false);
        continue;
      }
      if (job.status === 'dispatched') {
        // Sent on the old stream and never confirmed: send it again.
        await this.requeue(job, 'agent reconnected without it');
        continue;
      }
      const moved = await this.transition(
        job.id,
        { type: 'abort' },
        {
          error: 'the agent restarted and no longer has the job',
          finishedAt: new Date(),
        },
      );
      if (moved) await this.finished(moved.job, moved.from);
    }
    this.wake();
  }

  /** Results of a flush batch: the jobs read in one statement, then each moved on its own. */
  private async agentResults(batch: { workerId: string; event: JobEventMsg }[]): Promise<void> {
    if (batch.length === 0) return;
    const jobs = new Map(
      (await this.repository.findByIds(batch.map((b) => b.event.job_id))).map((j) => [j.id, j]),
    );
    for (const { workerId, event } of batch) {
      try {
        await this.agentFinished(workerId, event, jobs.get(event.job_id));
      } catch (err) {
        this.logger.warn({ err, job_id: event.job_id, worker_id: workerId }, 'job result not recorded');
      }
    }
  }

  private async agentFinished(
    workerId: string,
    event: JobEventMsg,
    job: JobEntity | undefined,
  ): Promise<void> {
    if (!job || job.workerId !== workerId) return;
    const results = (event.results ?? []).slice(0, 500).map((r) => ({
      name: printable(String(r.name)).slice(0, 63),
      action: printable(String(r.action)).slice(0, 32),
      ok: r.ok === true,
      error: r.error ? printable(String(r.error)).slice(0, MAX_JOB_ERROR_CHARS) : null,
    }));
    const phase = event.phase as 'succeeded' | 'failed' | 'cancelled';
    const moved = await this.transition(
      job.id,
      { type: phase },
      {
        results,
        error:
          phase === 'failed'
            ? printable(String(event.error || 'failed on the worker')).slice(0, MAX_JOB_ERROR_CHARS)
            : null,
        progress: phase === 'succeeded' ? 100 : job.progress,
        finishedAt: new Date(),
      },
      undefined,
      job,
    );
    if (moved) await this.finished(moved.job, moved.from, true);
    else if (this.hooks) await this.hooks.reachedNode(job);
  }

  /** Metrics, the job's log record, and the stack's bookkeeping, once per terminal transition. */
  private async finished(job: JobEntity, from: JobState, reachedNode = false): Promise<void> {
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
    this.lineCounts.delete(job.id);
    if (this.hooks) await this.hooks.finished(job, reachedNode);
    this.wake();
  }

  private sendCancel(job: JobEntity, cleanup: boolean): boolean {
    if (!job.workerId) return false;
    return this.sessions.send(job.workerId, { cancel_job: { job_id: job.id, cleanup } });
  }

  // ---- batched writes of the agents' events ----

  private bufferLine(jobId: string, workerId: string, line: string): void {
    if (this.lines.length >= MAX_BUFFERED_LINES) {
      this.droppedLines++;
      return;
    }
    const count = this.lineCounts.get(jobId) ?? 0;
    this.lineCounts.delete(jobId); // re-inserted last: the map drops its oldest entries first
    this.lineCounts.set(jobId, count + 1);
    if (this.lineCounts.size > MAX_COUNTED_JOBS) this.lineCounts.delete(this.lineCounts.keys().next().value!);
    if (count === MAX_LOG_LINES) {
      this.lines.push({
        jobId,
        workerId,
        time: new Date(),
        line: `[output truncated after ${MAX_LOG_LINES} lines]`,
      });
    }
    if (count >= MAX_LOG_LINES) return;
    this.lines.push({
      jobId,
      workerId,
      time: new Date(),
      line: printable(String(line)).slice(0, MAX_JOB_LINE_CHARS),
    });
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush();
    }, FLUSH_MS);
  }

  /** Writes buffered confirmations, progress and lines; serialized so order is kept. */
  private flush(): Promise<void> {
    // Each part on its own: a failure of one (e.g. a line the database refuses) loses nothing else.
    // The buffers are taken when the write starts, so a slow write makes the next batch bigger
    // instead of queueing more writes behind it.
    this.flushing = this.flushing.then(async () => {
      const accepted = this.accepted;
      const progress = [...this.progress].map(([id, p]) => ({
        id,
        workerId: p.workerId,
        progress: p.progress,
      }));
      const lines = this.lines;
      const results = this.results;
      this.results = [];
      this.accepted = [];
      this.progress = new Map();
      this.lines = [];
      if (this.droppedLines > 0) {
        this.logger.warn(
          { dropped: this.droppedLines },
          'job output lines dropped: the write buffer was full',
        );
        this.droppedLines = 0;
      }
      try {
        const running = await this.repository.markAccepted(accepted, new Date());
        for (const job of running) {
          this.logger.log({ job_id: job.id, job_type: job.type, worker_id: job.workerId }, 'job running');
        }
      } catch (err) {
        this.logger.warn({ err }, 'job confirmations not written');
      }
      try {
        await this.repository.setProgress(progress);
      } catch (err) {
        this.logger.warn({ err }, 'job progress not written');
      }
      try {
        await this.repository.appendLogs(lines);
      } catch (err) {
        this.logger.warn({ err, lines: lines.length }, 'job output lines not written');
      }
      try {
        await this.agentResults(results);
      } catch (err) {
        this.logger.warn({ err, results: results.length }, 'job results not recorded');
      }
    });
    return this.flushing;
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
