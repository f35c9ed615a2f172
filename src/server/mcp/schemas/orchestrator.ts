import * as z from 'zod/v4';
import { LOG_LEVELS } from '../../config/config.js';
import { timestamp } from './common.js';

/** Output schemas of the orchestrator tools, mirroring `src/contracts/api/orchestrator.ts` and `settings.ts`. */
export const health = {
  status: z
    .enum(['healthy', 'degraded', 'unhealthy'])
    .describe('unhealthy: the database fails; degraded: another check does'),
  version: z.string(),
  uptime: z.string().describe('Time since the start, e.g. 72h15m30s'),
  checks: z
    .object({ database: z.string(), grpc: z.string(), workers: z.string() })
    .describe('ok when passing, else a word saying why'),
};

export const info = {
  name: z.string(),
  version: z.string(),
  mode: z.literal('self-hosted'),
  api_versions: z.array(z.string()),
  started_at: timestamp(),
  uptime: z.string(),
  agent_endpoint: z.string().describe('host:port agents connect to over mutual TLS'),
  ca_fingerprint: z.string().nullable().describe("SHA-256 of the agents' CA certificate"),
};

export const settings = {
  log_level: z.enum(LOG_LEVELS),
  updated_at: timestamp()
    .nullable()
    .describe('When it last changed; null while the configured default applies'),
};
