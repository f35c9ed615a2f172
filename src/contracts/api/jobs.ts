// `.../orchestrator/jobs`: what deploys and destroys stacks. `POST .../stacks/:id/deploy` and
// `DELETE .../stacks/:id` answer the job they created.
import type { Timestamp } from './common.js';
import type { ListPage, PageQuery } from './page.js';

/** docs/jobs.md draws the graph. */
export type JobStatus =
  'queued' | 'dispatched' | 'running' | 'succeeded' | 'failed' | 'cancelling' | 'cancelled';

export type JobType = 'provision' | 'destroy';

/** What the agent did to one service. */
export interface JobResult {
  name: string;
  action: string;
  ok: boolean;
  error: string | null;
}

export interface JobView {
  id: string;
  type: JobType;
  stack_id: string;
  stack_name: string;
  revision: number;
  worker_id: string | null;
  status: JobStatus;
  /** Percent. */
  progress: number;
  attempts: number;
  max_attempts: number;
  error: string | null;
  results: JobResult[] | null;
  created_at: Timestamp;
  dispatched_at: Timestamp | null;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
}

export interface ListJobsQuery extends PageQuery {
  status?: JobStatus;
  type?: JobType;
  stack_id?: string;
  worker_id?: string;
}

export type JobList = ListPage<'jobs', JobView>;

/** `GET .../jobs/:id/logs?after=&limit=`: `after` is the previous page's `next_after`. */
export interface JobLogsQuery {
  after?: number;
  /** At most 5000. */
  limit?: number;
}

export interface JobLogLine {
  time: Timestamp;
  line: string;
}

export interface JobLogPage {
  job_id: string;
  lines: JobLogLine[];
  next_after: number;
  /** The job has ended and every line was sent. */
  complete: boolean;
}

/** `POST .../jobs/:id/cleanup`. */
export interface JobCleanup {
  job: JobView;
  /** Its worker was told to stop the job and to put the stack back. */
  worker_notified: boolean;
}
