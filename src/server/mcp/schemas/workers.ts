import * as z from 'zod/v4';
import { WORKER_STATES } from '../../workers/worker-state.js';
import { labels, nextCursor, timestamp } from './common.js';

/** Output schemas of the worker tools, mirroring `src/contracts/api/workers.ts`. */
export const worker = {
  id: z.string(),
  name: z.string(),
  status: z.enum(WORKER_STATES),
  last_heartbeat: timestamp().nullable(),
  metrics: z
    .object({
      cpu_percent: z.number(),
      memory_percent: z.number(),
      disk_percent: z.number(),
      containers_running: z.number(),
    })
    .nullable()
    .describe("The node's figures from its latest heartbeat; null before the first"),
  hostname: z.string(),
  address: z.string().describe("Where peers reach it; '' when unknown"),
  os: z.string(),
  arch: z.string(),
  driver: z.string(),
  labels: labels(),
  version: z.string(),
  connected: z.boolean(),
  approved_at: timestamp().nullable(),
  created_at: timestamp(),
};

export const workerList = { workers: z.array(z.object(worker)), next_cursor: nextCursor() };

/** delete_worker's answer: the HTTP route answers 204 with no body. */
export const deleted = { id: z.string(), deleted: z.literal(true) };

export const connectivity = {
  workers: z.array(z.string()).describe('Ids of the approved workers, the rows and columns of the matrix'),
  links: z.array(
    z.object({
      from: z.string(),
      to: z.string(),
      reachable: z.boolean(),
      rtt_ms: z.number().nullable(),
      checked_at: timestamp(),
    }),
  ),
};

export const connectivityCheck = {
  probe_id: z.string(),
  workers: z.number().describe('How many connected agents were asked to probe their peers'),
};
