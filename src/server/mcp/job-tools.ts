import * as z from 'zod/v4';
import { JOB_STATES, JOB_TYPES } from '../jobs/job-state.js';
import { JobsService } from '../jobs/jobs.service.js';
import { pageArgs } from './schemas/common.js';
import * as out from './schemas/jobs.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

/** A job id; the HTTP path takes any string and answers 404 for one that is not a job's. */
const jobId = z
  .string()
  .min(1)
  .max(64)
  .describe('The job id (a UUID), as list_jobs or deploy_stack answer it');

/** Stops or ends a job of this instance's own workers; calling again changes nothing more. */
const ENDS_JOB = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

/** The job tools: each calls the JobsService method its HTTP route calls, with that route's scope. */
export function jobTools(jobs: JobsService): McpTool[] {
  return [
    defineTool({
      name: 'list_jobs',
      title: 'List jobs',
      description:
        "The caller's deploy (provision) and destroy jobs, newest first, one page at a time; filter by status, type, stack or worker.",
      scope: 'orchestrator:read',
      // ListJobsDto's filters and bounds (z.uuid is class-validator's IsUUID pattern, nil and max included).
      input: {
        ...pageArgs,
        status: z.enum(JOB_STATES).optional(),
        type: z.enum(JOB_TYPES).optional(),
        stack_id: z.uuid().optional().describe('Only jobs of this stack'),
        worker_id: z.uuid().optional().describe('Only jobs placed on this worker'),
      },
      output: out.jobList,
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const page = await jobs.list(caller, args);
        return { jobs: page.items, next_cursor: page.next_cursor };
      },
    }),
    defineTool({
      name: 'get_job',
      title: 'Get a job',
      description:
        'One job: status (queued, dispatched, running, succeeded, failed, cancelling, cancelled), progress, attempts, error (also why a queued job waits) and per-service results. Poll it after deploy_stack, destroy_stack or resolve_stack_drift until it has ended.',
      scope: 'orchestrator:read',
      input: { id: jobId },
      output: out.jobView,
      annotations: READ_ONLY,
      run: ({ id }, caller) => jobs.get(caller, id),
    }),
    defineTool({
      name: 'get_job_logs',
      title: 'Job logs',
      description:
        "A job's output lines from its agent, oldest first, one page at a time: pass next_after as after for the next page; complete is true once the job has ended and every line was sent.",
      scope: 'orchestrator:read',
      // JobLogsDto's bounds.
      input: {
        id: jobId,
        after: z.number().int().min(0).optional().describe('next_after of the previous page (default 0)'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(5000)
          .optional()
          .describe('Lines per page, 1 to 5000 (default 1000)'),
      },
      output: out.jobLogPage,
      annotations: READ_ONLY,
      run: ({ id, after, limit }, caller) => jobs.logs(caller, id, after, limit),
    }),
    defineTool({
      name: 'cancel_job',
      title: 'Cancel a job',
      description:
        'Cancels a job and answers it. status cancelled: it was still queued and is cancelled now (HTTP 200). status cancelling: its worker was asked to stop it (HTTP 202); poll get_job until cancelled. A job that has ended is refused (409).',
      scope: 'orchestrator:write',
      input: { id: jobId },
      output: out.jobView,
      annotations: ENDS_JOB,
      run: async ({ id }, caller) => (await jobs.cancel(caller, id)).job,
    }),
    defineTool({
      name: 'cleanup_job',
      title: 'Clean up a job',
      description:
        "Forces a stuck job to end as failed (reason cleaned_up) so its stack is free again, and has its worker stop it and put the stack back as the last successful job left it; for a failed or cancelled job only the worker's revert. A succeeded job is refused (409).",
      scope: 'orchestrator:write',
      input: { id: jobId },
      output: out.jobCleanup,
      annotations: ENDS_JOB,
      run: ({ id }, caller) => jobs.cleanup(caller, id),
    }),
  ];
}
