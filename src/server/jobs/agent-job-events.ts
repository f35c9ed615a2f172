import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { HelloMsg, JobEventMsg } from '../../contracts/agent-protocol/index.js';
import { MAX_JOB_ERROR_CHARS, MAX_JOB_LINES_PER_EVENT } from '../../contracts/agent-protocol/limits.js';
import { AgentSessions, type AgentWorkHandler } from '../agent-gateway/agent-sessions.js';
import { SessionDirectory } from '../agent-gateway/session-directory.js';
import { isUuid } from '../common/ids.js';
import type { JobEntity } from './entities/job.entity.js';
import { JobDispatcher } from './job-dispatcher.js';
import { printable } from '../common/printable.js';
import { JobEventWriter, type AgentResult } from './job-event-writer.js';
import { JobLifecycle } from './job-lifecycle.js';
import { JobsRepository, type JobPatch } from './jobs.repository.js';
import { nextJobState, type JobState } from './job-state.js';

/**
 * What agents say about their jobs (the jobs feature's AgentWorkHandler): job events go to the
 * write buffer and their final results move the jobs; a reconnecting agent's jobs are reconciled
 * with what it still runs; a disconnected agent's unconfirmed jobs go back to the queue.
 */
@Injectable()
export class AgentJobEvents implements AgentWorkHandler, OnModuleInit {
  private readonly logger = new Logger('jobs');

  constructor(
    private readonly repository: JobsRepository,
    private readonly sessions: AgentSessions,
    private readonly directory: SessionDirectory,
    private readonly writer: JobEventWriter,
    private readonly lifecycle: JobLifecycle,
    private readonly dispatcher: JobDispatcher,
  ) {}

  onModuleInit(): void {
    this.writer.onResults((batch) => this.recordResults(batch));
    this.sessions.addWorkHandler(this);
  }

  connected(workerId: string, hello: HelloMsg): void {
    void this.reconcileWorker(workerId, new Set(hello.active_job_ids ?? [])).catch((err: unknown) =>
      this.logger.warn({ err, worker_id: workerId }, 'reconciling jobs of a reconnected agent failed'),
    );
  }

  disconnected(workerId: string): void {
    // Jobs the agent never confirmed go back to the queue; running ones wait for the agent to come
    // back and report, or for their timeout, cancel or cleanup. When the agent is connected to
    // another replica already, that replica's reconnect reconciliation has their fate (and the
    // dispatched jobs may be its own).
    void this.directory
      .heldElsewhere(workerId)
      .then((elsewhere) => (elsewhere ? [] : this.repository.forAgent(workerId)))
      .then(async (jobs) => {
        for (const job of jobs.filter((j) => j.status === 'dispatched'))
          await this.lifecycle.requeue(job, 'agent disconnected');
      })
      .catch((err: unknown) =>
        this.logger.warn({ err, worker_id: workerId }, 'requeue after disconnect failed'),
      );
  }

  jobEvent(workerId: string, event: JobEventMsg): void {
    if (!isUuid(event.job_id)) return;
    const lines = (event.lines ?? []).slice(0, MAX_JOB_LINES_PER_EVENT);
    for (const line of lines) this.writer.bufferLine(event.job_id, workerId, line);
    // Any other phase carries only its lines.
    switch (event.phase) {
      case 'accepted':
        this.writer.bufferAccepted(event.job_id, workerId);
        return;
      case 'progress':
        this.writer.bufferProgress(
          event.job_id,
          workerId,
          Math.max(0, Math.min(100, Math.floor(Number(event.progress) || 0))),
        );
        return;
      case 'succeeded':
      case 'failed':
      case 'cancelled':
        // Handled in the next write, after this job's confirmation and lines.
        this.writer.bufferResult(workerId, event);
    }
  }

  /** After a reconnect: what the agent still runs is running; what it lost has failed. */
  private async reconcileWorker(workerId: string, active: Set<string>): Promise<void> {
    const jobs = await this.repository.forAgent(workerId);
    for (const job of jobs) {
      if (job.status === 'queued') continue;
      if (active.has(job.id)) {
        if (job.status === 'dispatched') this.writer.bufferAccepted(job.id, workerId);
        else if (job.status === 'cancelling') await this.lifecycle.sendCancel(job, false);
        continue;
      }
      if (job.status === 'dispatched') {
        // Sent on the old stream and never confirmed: send it again.
        await this.lifecycle.requeue(job, 'agent reconnected without it');
        continue;
      }
      await this.lifecycle.abort(job, 'the agent restarted and no longer has the job');
    }
    // Jobs queued for this worker while it was away can go now. (Requeued and aborted ones above
    // wake the dispatcher themselves; jobs to place wait for its next tick, as they do for any
    // worker.) Not a round per reconnect: a fleet reconnecting at once would have the
    // dispatcher claim without pause.
    if (jobs.some((job) => job.status === 'queued')) this.dispatcher.wake();
  }

  /**
   * Results of a write batch: the jobs read in one statement, moved in one (`finishMany`), and their
   * bookkeeping done together (`JobLifecycle.finishedMany`). An event the batch cannot take (a job
   * that moved since it was read, a second event for the same job) takes the single-job path.
   */
  private async recordResults(batch: AgentResult[]): Promise<void> {
    if (batch.length === 0) return;
    const jobs = new Map(
      (await this.repository.findByIds(batch.map((b) => b.event.job_id))).map((j) => [j.id, j]),
    );
    const rows: (Parameters<JobsRepository['finishMany']>[0][number] & { result: AgentResult })[] = [];
    const single: AgentResult[] = [];
    const noMove: JobEntity[] = [];
    const taken = new Set<string>();
    for (const result of batch) {
      const job = jobs.get(result.event.job_id);
      if (!job || job.workerId !== result.workerId) continue;
      if (taken.has(job.id)) {
        single.push(result);
        continue;
      }
      taken.add(job.id);
      const phase = result.event.phase as 'succeeded' | 'failed' | 'cancelled';
      const to = nextJobState(job.status, { type: phase });
      if (to === null) noMove.push(job);
      else rows.push({ job, to, patch: finalPatch(result.event, job), result });
    }
    // A destroy's stack is deleted in the batch's transaction; what must go first goes now. One that
    // cannot takes the single-job path, which tries again.
    for (const row of rows.filter((r) => r.job.type === 'destroy' && r.to === 'succeeded')) {
      try {
        await this.lifecycle.destroySucceeding([row.job]);
      } catch (err) {
        this.logger.warn({ err, job_id: row.job.id }, 'destroyed stack not cleaned up; trying again');
        rows.splice(rows.indexOf(row), 1);
        single.push(row.result);
      }
    }
    let moved: { job: JobEntity; from: JobState }[] = [];
    let written: unknown;
    try {
      ({ moved, written } = await this.repository.finishMany(rows, (done, manager) =>
        this.lifecycle.finishingMany(done, true, manager),
      ));
    } catch (err) {
      // Each then on its own, so that one the database refuses loses no other.
      this.logger.warn({ err, results: rows.length }, 'job results not written together');
    }
    for (const { job, from } of moved)
      this.lifecycle.logTransition(job, from, job.status as 'succeeded' | 'failed' | 'cancelled');
    try {
      await this.lifecycle.finishedMany(moved, true, written);
    } catch (err) {
      this.logger.warn({ err, results: moved.length }, 'job results not recorded');
    }
    // The node reflects a job whose final event did not move it (it had ended already).
    for (const job of noMove) {
      try {
        await this.lifecycle.reachedNode(job);
      } catch (err) {
        this.logger.warn({ err, job_id: job.id }, 'job result not recorded');
      }
    }
    // Jobs that moved since they were read: read again, as a single transition would.
    const movedIds = new Set(moved.map((m) => m.job.id));
    const raced = rows.filter((r) => !movedIds.has(r.job.id)).map((r) => r.result);
    for (const { workerId, event } of [...raced, ...single]) {
      try {
        await this.agentFinished(workerId, event);
      } catch (err) {
        this.logger.warn({ err, job_id: event.job_id, worker_id: workerId }, 'job result not recorded');
      }
    }
  }

  /** One final event on its own: the job read again and moved if the event still applies. */
  private async agentFinished(workerId: string, event: JobEventMsg): Promise<void> {
    const job = await this.repository.findById(event.job_id);
    if (!job || job.workerId !== workerId) return;
    const phase = event.phase as 'succeeded' | 'failed' | 'cancelled';
    const moved = await this.lifecycle.move(job.id, { type: phase }, finalPatch(event, job), {
      known: job,
      reachedNode: true,
    });
    if (!moved) await this.lifecycle.reachedNode(job);
  }
}

/** What a final event stores on its job. */
function finalPatch(
  event: JobEventMsg,
  job: JobEntity,
): Required<Pick<JobPatch, 'results' | 'error' | 'progress' | 'finishedAt'>> {
  const results = (event.results ?? []).slice(0, 500).map((r) => ({
    name: printable(String(r.name)).slice(0, 63),
    action: printable(String(r.action)).slice(0, 32),
    ok: r.ok === true,
    error: r.error ? printable(String(r.error)).slice(0, MAX_JOB_ERROR_CHARS) : null,
  }));
  const phase = event.phase as 'succeeded' | 'failed' | 'cancelled';
  return {
    results,
    error:
      phase === 'failed'
        ? printable(String(event.error || 'failed on the worker')).slice(0, MAX_JOB_ERROR_CHARS)
        : null,
    progress: phase === 'succeeded' ? 100 : job.progress,
    finishedAt: new Date(),
  };
}
