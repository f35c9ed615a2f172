import * as z from 'zod/v4';
import { nextCursor, timestamp } from './common.js';

/** Output schemas of the stack tools, mirroring `src/contracts/api/stacks.ts`. */
export const stackView = {
  id: z.string(),
  name: z.string(),
  status: z
    .enum(['draft', 'deploying', 'deployed', 'failed', 'destroying'])
    .describe('draft: never deployed; the others follow its jobs'),
  stackkit: z.string(),
  variant: z.string(),
  revision: z.number().int().describe('The current (latest) revision'),
  deployed_revision: z.number().int().nullable(),
  worker_id: z.string().nullable(),
  services: z.array(z.string()).describe('Service names in dependency order, monitoring services included'),
  created_at: timestamp(),
  updated_at: timestamp(),
  format: z.enum(['stack', 'compose']).describe('The format the current revision was written in'),
  warnings: z
    .array(
      z.object({
        path: z.string(),
        category: z.string(),
        message: z.string(),
        line: z.number().nullable(),
        column: z.number().nullable(),
      }),
    )
    .optional()
    .describe('On create and update: what validation warned of'),
};

export const stackList = {
  stacks: z.array(z.object(stackView)),
  next_cursor: nextCursor(),
};

export const stackRevisionList = {
  stack_id: z.string(),
  revisions: z.array(
    z.object({
      revision: z.number().int(),
      created_at: timestamp(),
      created_by: z.string().describe('The client that wrote it'),
      current: z.boolean(),
      deployed: z.boolean(),
    }),
  ),
};

export const stackHealth = {
  stack_id: z.string(),
  overall: z.enum(['healthy', 'degraded', 'unhealthy', 'unknown']),
  services: z.array(
    z.object({
      name: z.string(),
      status: z.enum(['healthy', 'unhealthy', 'starting', 'restarting', 'stopped', 'missing', 'unknown']),
      uptime: z.string().describe('e.g. 0h12m5s'),
      health_check: z
        .object({ url: z.string(), status_code: z.number().int(), latency_ms: z.number() })
        .optional()
        .describe('The latest health check, for a service that has one and has been checked'),
    }),
  ),
  worker_id: z.string().nullable(),
  reported_at: timestamp().nullable().describe("The worker's latest state report; null without one"),
};

/** `src/contracts/api/stack-logs.ts`' StackLogPage. */
export const stackLogPage = {
  stack_id: z.string(),
  lines: z
    .array(
      z.object({
        time: timestamp().describe('When the agent read the line'),
        service: z.string(),
        worker_id: z.string(),
        stream: z
          .enum(['stdout', 'stderr', 'agent'])
          .describe("agent: the agent's own notes (lines it dropped)"),
        line: z.string(),
      }),
    )
    .describe('Oldest first'),
  truncated: z
    .boolean()
    .describe(
      "More lines matched than limit: older ones were left out (pass the first line's time as until)",
    ),
};
