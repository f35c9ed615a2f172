import * as z from 'zod/v4';
import { timestamp } from './common.js';

/** Output schemas of the tunnel tools, mirroring `src/contracts/api/tunnel.ts`. */
export const tunnelStatus = {
  state: z.enum(['stopped', 'starting', 'running', 'reconnecting', 'stopping', 'error']),
  provider: z.enum(['ssh', 'cloudflared']),
  public_url: z.string().nullable(),
  agent_endpoint: z.string().nullable().describe('host:port agents dial through the tunnel'),
  started_at: timestamp().nullable(),
  last_error: z.string().nullable(),
};

export const registryUrl = {
  url: z.string(),
  source: z.enum(['tunnel', 'custom', 'config']),
};

export const topology = {
  environment: z.object({
    kind: z.enum(['bare-metal', 'vm', 'container', 'kubernetes']),
    evidence: z.array(z.string()),
  }),
  has_nat: z.boolean(),
  local_ips: z.array(z.string()),
  public_ip: z.string().nullable(),
  default_gateway: z.string().nullable(),
  private_subnet: z.string().nullable(),
  recommended_mode: z.enum(['direct', 'tunnel']),
  reason: z.string(),
};

export const subdomainList = {
  subdomains: z.array(
    z.object({ base_id: z.string(), subdomain: z.string(), url: z.string(), created_at: timestamp() }),
  ),
};

export const subdomainServices = {
  base_id: z.string(),
  services: z.array(
    z.object({ name: z.string(), subdomain: z.string(), url: z.string(), target: z.string() }),
  ),
};

export const urlValidation = {
  url: z.string().nullable(),
  valid: z.boolean(),
  reachable: z.boolean(),
  checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })),
};
