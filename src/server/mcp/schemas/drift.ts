import * as z from 'zod/v4';
import { timestamp } from './common.js';
import { jobView } from './jobs.js';

/** Output schemas of the drift tools, mirroring `src/contracts/api/drift.ts`. */
export const driftView = {
  stack_id: z.string(),
  status: z
    .enum(['in_sync', 'drifted', 'unknown'])
    .describe('unknown: never deployed, busy with a job, or no report from its worker'),
  checked_at: timestamp().nullable(),
  revision: z.number().int(),
  items: z.array(
    z.object({
      resource: z.string().describe('The service name'),
      kind: z.enum(['missing', 'modified', 'unexpected']),
      worker_id: z.string().nullable(),
      field: z.string().nullable().describe('The field that differs, for modified'),
      desired: z.string().nullable(),
      actual: z.string().nullable(),
      ignored: z.boolean().describe('Under an ignore rule: shown, but out of the status and kept by deploys'),
      detected_at: timestamp(),
      last_seen: timestamp(),
    }),
  ),
  ignored_resources: z.array(z.string()),
};

export const driftResolve = {
  job_id: z.string(),
  job: z.object(jobView),
};
