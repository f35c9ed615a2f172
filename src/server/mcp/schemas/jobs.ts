import * as z from 'zod/v4';
import { JOB_STATES, JOB_TYPES } from '../../jobs/job-state.js';
import { nextCursor, timestamp } from './common.js';

/** Output schemas of the job tools, mirroring `src/contracts/api/jobs.ts`. */
export const jobView = {
  id: z.string(),
  type: z.enum(JOB_TYPES).describe('provision deploys a revision; destroy removes the stack'),
  stack_id: z.string(),
  stack_name: z.string(),
  revision: z.number().int(),
  worker_id: z.string().nullable().describe('The worker it was placed on; null while unplaced'),
  status: z
    .enum(JOB_STATES)
    .describe('queued, dispatched, running, then succeeded, failed or cancelled (cancelling on the way)'),
  progress: z.number().describe('Percent'),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  error: z.string().nullable().describe('Why it failed, or why it still waits in the queue'),
  results: z
    .array(
      z.object({
        name: z.string().describe('Service name'),
        action: z
          .string()
          .describe('What the agent did: created, replaced, unchanged, started, removed, kept or failed'),
        ok: z.boolean(),
        error: z.string().nullable(),
      }),
    )
    .nullable(),
  created_at: timestamp(),
  dispatched_at: timestamp().nullable(),
  started_at: timestamp().nullable(),
  finished_at: timestamp().nullable(),
};

export const jobList = {
  jobs: z.array(z.object(jobView)),
  next_cursor: nextCursor(),
};

export const jobLogPage = {
  job_id: z.string(),
  lines: z.array(z.object({ time: timestamp(), line: z.string() })),
  next_after: z.number().int().describe('Pass as after for the next page'),
  complete: z.boolean().describe('The job has ended and every line was sent'),
};

export const jobCleanup = {
  job: z.object(jobView),
  worker_notified: z
    .boolean()
    .describe('Its worker was told to stop the job and put the stack back as the last good job left it'),
};
