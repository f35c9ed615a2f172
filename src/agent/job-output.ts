import type { JobEventMsg } from '../contracts/agent-protocol/index.js';
import {
  MAX_JOB_LINE_CHARS,
  MAX_JOB_LINES_BYTES,
  MAX_JOB_LINES_PER_EVENT,
  utf8Bytes,
} from '../contracts/agent-protocol/limits.js';
import type { ApplyContext } from './drivers/driver.js';

/** Output lines are sent in batches at most this often. */
const LINE_FLUSH_MS = 100;

type ProgressEvent = Pick<JobEventMsg, 'job_id' | 'phase'> & Partial<JobEventMsg>;

/**
 * A running job's output and progress as `progress` events: lines are batched (every
 * LINE_FLUSH_MS, or sooner when a batch reaches the per-event limits), and a progress figure first
 * sends the lines before it, so the service sees them in the order they happened.
 */
export class JobOutput {
  private readonly lines: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly jobId: string,
    private readonly send: (event: ProgressEvent) => void,
  ) {}

  /** An apply context for the job's driver work, logging and reporting through this output. */
  context(signal: AbortSignal): ApplyContext {
    return { signal, log: (line) => this.log(line), progress: (done, total) => this.progress(done, total) };
  }

  log(line: string): void {
    // The service keeps no more of a line than this; an event stays far below the message limit.
    const kept = line.length > MAX_JOB_LINE_CHARS ? line.slice(0, MAX_JOB_LINE_CHARS) : line;
    this.lines.push(kept);
    this.bytes += utf8Bytes(kept);
    if (this.lines.length >= MAX_JOB_LINES_PER_EVENT || this.bytes >= MAX_JOB_LINES_BYTES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), LINE_FLUSH_MS);
  }

  progress(done: number, total: number): void {
    this.flush();
    const progress = total > 0 ? Math.floor((done / total) * 100) : 100;
    this.send({ job_id: this.jobId, phase: 'progress', progress });
  }

  /** Sends the lines not sent yet. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.bytes = 0;
    if (this.lines.length > 0)
      this.send({ job_id: this.jobId, phase: 'progress', lines: this.lines.splice(0) });
  }
}
