import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { JobEventMsg } from '../../contracts/agent-protocol/index.js';
import { MAX_JOB_LINE_CHARS } from '../../contracts/agent-protocol/limits.js';
import { printable } from '../common/printable.js';
import { JobsRepository } from './jobs.repository.js';

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

/** A final job event (succeeded, failed, cancelled) as an agent sent it. */
export interface AgentResult {
  workerId: string;
  event: JobEventMsg;
}

/**
 * The write buffer of the agents' job events, the hot path: confirmations, progress and output
 * lines are kept in memory and written every FLUSH_MS in one statement each; final events are
 * handed, in the same serialized write and after the job's confirmation and lines, to the handler
 * the agents' events register (they move the job). On shutdown what is buffered is written.
 */
@Injectable()
export class JobEventWriter implements OnModuleDestroy {
  private readonly logger = new Logger('jobs');
  private flushTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private accepted: { id: string; workerId: string }[] = [];
  private progress = new Map<string, { workerId: string; progress: number }>();
  private lines: { jobId: string; workerId: string; time: Date; line: string }[] = [];
  /** Lines seen per job (bounded: the oldest entries go first). */
  private lineCounts = new Map<string, number>();
  private droppedLines = 0;
  /** Final job events waiting for the next write. */
  private results: AgentResult[] = [];
  private recordResults: (batch: AgentResult[]) => Promise<void> = () => Promise.resolve();
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly repository: JobsRepository) {}

  /** Who moves the jobs of a batch of final events (the agents' job events). */
  onResults(record: (batch: AgentResult[]) => Promise<void>): void {
    this.recordResults = record;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flush();
  }

  /** Resolves once every write started so far has finished (reads of the job's output wait for it). */
  written(): Promise<void> {
    return this.flushing;
  }

  bufferAccepted(jobId: string, workerId: string): void {
    this.accepted.push({ id: jobId, workerId });
    this.scheduleFlush();
  }

  bufferProgress(jobId: string, workerId: string, progress: number): void {
    this.progress.set(jobId, { workerId, progress });
    this.scheduleFlush();
  }

  bufferResult(workerId: string, event: JobEventMsg): void {
    if (this.results.length < MAX_BUFFERED_RESULTS) this.results.push({ workerId, event });
    else this.logger.warn({ job_id: event.job_id, worker_id: workerId }, 'job result dropped: buffer full');
    this.scheduleFlush();
  }

  bufferLine(jobId: string, workerId: string, line: string): void {
    this.scheduleFlush();
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

  /** A finished job's output is complete: its line count is no longer needed. */
  forgetLineCount(jobId: string): void {
    this.lineCounts.delete(jobId);
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
        await this.recordResults(results);
      } catch (err) {
        this.logger.warn({ err, results: results.length }, 'job results not recorded');
      }
    });
    return this.flushing;
  }
}
